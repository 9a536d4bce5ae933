// SPDX-License-Identifier: Apache-2.0

package output

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
)

// compressHour replaces a closed hour's .csv with its compressed copy. The copy is written
// under a .tmp name and synced before it is renamed, and the .csv is removed only after
// that, so a crash at any point leaves one complete copy of every row.
func (w *Writer) compressHour(ctx context.Context, h hourEntry) {
	src := h.Path
	suffix := hourfile.Gzip
	if w.cfg.Compress == CompressZstd {
		suffix = hourfile.Zstd
	}
	dst := filepath.Join(w.cfg.Dir, h.Kind.Name(h.Hour, suffix))
	log := w.log.WithField(fieldFile, src)
	if _, err := os.Lstat(dst); err == nil {
		// Only a clock that went back a whole hour gets here; keeping both is safe.
		log.Warn("hour is already compressed; leaving this copy uncompressed")
		return
	}
	if err := w.compressFile(ctx, src, dst); err != nil {
		if ctx.Err() == nil {
			log.WithError(err).Error("compressing hour file failed; will retry at the next hour")
		}
		return
	}
	if err := os.Remove(src); err != nil {
		log.WithError(err).Error("removing compressed hour file failed")
		return
	}
	if err := outdir.SyncDir(w.cfg.Dir); err != nil {
		log.WithError(err).Error("syncing output dir failed")
		return
	}
	log.WithField(fieldBytes, h.size).Info("compressed hour file")
}

// compressFile writes src compressed to dst, atomically.
func (w *Writer) compressFile(ctx context.Context, src, dst string) (err error) {
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
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, w.cfg.FileMode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	if err := outdir.SetOwnership(out, w.cfg.FileMode, w.gid); err != nil {
		return err
	}
	enc, err := w.newEncoder(out, filepath.Base(src))
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
	return outdir.SyncDir(w.cfg.Dir)
}

// newEncoder compresses on the calling goroutine only: zstd's default of one goroutine per
// CPU would escape the low priority of the maintenance thread.
func (w *Writer) newEncoder(out io.Writer, name string) (io.WriteCloser, error) {
	if w.cfg.Compress == CompressZstd {
		return zstd.NewWriter(out, zstd.WithEncoderConcurrency(1))
	}
	gz := gzip.NewWriter(out)
	gz.Name = name // what gunzip -N restores
	return gz, nil
}
