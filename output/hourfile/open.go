// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Open opens an hour file for reading, decompressing by suffix. The current hour's
// plain file may be growing while it is read; the record reader ignores a last row the
// writer has not finished.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	switch {
	case strings.HasSuffix(path, Gzip):
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return readCloser{zr, func() error { return errors.Join(zr.Close(), f.Close()) }}, nil
	case strings.HasSuffix(path, Zstd):
		// One goroutine: a report is a batch job that should not take every CPU of the
		// server it is investigating.
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
	}
	return f, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
