// SPDX-License-Identifier: Apache-2.0

// Package compress compresses the closed hours of the output dir, gzip or zstd, so that a
// crash at any point leaves one complete copy of every row.
package compress

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
)

// Log field keys, as the Writer's.
const (
	fieldFile  = "file"
	fieldBytes = "bytes"
)

// Formats of compressed hours.
const (
	Gzip = "gzip" // zgrep, zcat and DuckDB read it as is
	Zstd = "zstd" // smaller and faster; needs zstdgrep or zstdcat
	None = "none"
)

// Options say how an hour is compressed and what its compressed copy is made as.
type Options struct {
	Format   string      // Gzip or Zstd
	FileMode os.FileMode // of the copy
	GID      int         // the copy's group; -1 leaves it alone
	Log      *logrus.Entry
}

// Hour replaces the closed hour h's .csv in dir, of size bytes, with its compressed copy.
// The copy is written under a .tmp name and synced before it is renamed, and the .csv is
// removed only after that, so a crash at any point leaves one complete copy of every row.
// Failures are logged; the .csv stays for the next pass.
func Hour(ctx context.Context, dir string, h hourfile.File, size int64, opt Options) {
	src := h.Path
	suffix := hourfile.Gzip
	if opt.Format == Zstd {
		suffix = hourfile.Zstd
	}
	dst := filepath.Join(dir, h.Kind.Name(h.Hour, suffix))
	log := opt.Log.WithField(fieldFile, src)
	if _, err := os.Lstat(dst); err == nil {
		// Only a clock that went back a whole hour gets here; keeping both is safe.
		log.Warn("hour is already compressed; leaving this copy uncompressed")
		return
	}
	if err := compressFile(ctx, dir, src, dst, opt); err != nil {
		if ctx.Err() == nil {
			log.WithError(err).Error("compressing hour file failed; will retry at the next hour")
		}
		return
	}
	if err := os.Remove(src); err != nil {
		log.WithError(err).Error("removing compressed hour file failed")
		return
	}
	if err := outdir.SyncDir(dir); err != nil {
		log.WithError(err).Error("syncing output dir failed")
		return
	}
	log.WithField(fieldBytes, size).Info("compressed hour file")
}

// compressFile writes src compressed to dst, in dir, atomically.
func compressFile(ctx context.Context, dir, src, dst string, opt Options) (err error) {
	// Neither file is followed if it is a link: the copy is readable by the group, and must
	// not hold, or overwrite, a file the link points to.
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + hourfile.Tmp
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, opt.FileMode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	if err := outdir.SetOwnership(out, opt.FileMode, opt.GID); err != nil {
		return err
	}
	enc, err := newEncoder(out, filepath.Base(src), opt.Format)
	if err != nil {
		return err
	}
	if _, err := io.Copy(enc, outdir.ContextReader(ctx, in)); err != nil {
		enc.Close()
		return err
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("finishing %s: %w", tmp, err)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return outdir.SyncDir(dir)
}

// newEncoder compresses on the calling goroutine only: zstd's default of one goroutine per
// CPU would escape the low priority of the maintenance thread.
func newEncoder(out io.Writer, name, format string) (io.WriteCloser, error) {
	if format == Zstd {
		return zstd.NewWriter(out, zstd.WithEncoderConcurrency(1))
	}
	gz := gzip.NewWriter(out)
	gz.Name = name // what gunzip -N restores
	return gz, nil
}
