// SPDX-License-Identifier: Apache-2.0

package output

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
)

// sideFile is one of the files an hour has beside its samples: the stacks its rows refer
// to, or its ticks. It is opened on first use for the samples file's hour, holds whole
// lines only, and a failure to write it is logged once an hour: the rows matter more.
type sideFile struct {
	kind   hourfile.Kind
	file   *hourFile
	failed bool
	// written counts the bytes that reached the kind's files; read by Stats from any
	// goroutine.
	written atomic.Uint64
}

// current reports whether the file is open for hour.
func (sf *sideFile) current(hour time.Time) bool {
	return sf.file != nil && sf.file.hour.Equal(hour)
}

// open opens the file of kind for hour, after closing the previous hour's.
func (sf *sideFile) open(w *Writer, hour time.Time) error {
	if err := sf.close(); err != nil {
		w.log.WithError(err).Debug("closing the previous hour's " + sf.kind.Prefix() + " file failed")
	}
	hf, _, err := openKindFile(sf.kind, w.cfg.Dir, hour, w.cfg.FileMode, w.gid)
	if err != nil {
		return err
	}
	sf.file = hf
	return nil
}

// appendLines writes whole lines, after the header in a new file; a short write is cut
// back so that the file holds whole lines only.
func (sf *sideFile) appendLines(buf []byte) error {
	hf := sf.file
	if hf.size == 0 {
		buf = append([]byte(schema.KindHeader(sf.kind)), buf...)
	}
	n, err := hf.f.Write(buf)
	if err == nil {
		hf.size += int64(n)
		sf.written.Add(uint64(n))
		return nil
	}
	return errors.Join(err, hf.f.Truncate(hf.size))
}

// fail logs err the first time in the hour; what says what a reader misses.
func (sf *sideFile) fail(w *Writer, err error, what string) {
	if !sf.failed {
		sf.failed = true
		w.log.WithError(err).Warn(what)
	}
}

// close ends the hour's file, synced like the samples so that compression reads what a
// power loss would keep.
func (sf *sideFile) close() error {
	if sf.file == nil {
		return nil
	}
	f := sf.file.f
	sf.file = nil
	return errors.Join(f.Sync(), f.Close())
}
