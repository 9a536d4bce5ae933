// SPDX-License-Identifier: Apache-2.0

package output

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
)

// ErrParquetExists is returned by ConvertHour when the hour's Parquet file is there already.
var ErrParquetExists = errors.New("the hour's Parquet file exists")

// FileOptions are the permissions of the files and folders a conversion creates.
type FileOptions struct {
	FileMode os.FileMode // DefaultFileMode when 0
	DirMode  os.FileMode // DefaultDirMode when 0
	GID      int         // the group to give them; -1 leaves it alone
}

// ConvertHour writes the closed hour file src (plain or compressed CSV) as Parquet at its
// place in dir's Parquet tree (hourfile.ParquetPath), for host, and returns its path. It
// is written under a .tmp name, synced, then renamed, so that the tree never holds half a
// file under a final name; an existing file is left alone (ErrParquetExists).
func ConvertHour(ctx context.Context, dir string, src hourfile.File, host string, opt FileOptions) (string, ParquetStats, error) {
	if opt.FileMode == 0 {
		opt.FileMode = DefaultFileMode
	}
	if opt.DirMode == 0 {
		opt.DirMode = DefaultDirMode
	}
	rel := src.Kind.ParquetPath(src.Hour, host)
	dst := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Lstat(dst); err == nil {
		return dst, ParquetStats{}, ErrParquetExists
	}
	if err := mkdirTree(dir, filepath.Dir(rel), opt.DirMode, opt.GID); err != nil {
		return dst, ParquetStats{}, err
	}
	st, err := writeParquetFile(ctx, src, dst, host, opt)
	if err != nil {
		return dst, st, fmt.Errorf("writing %s: %w", dst, err)
	}
	return dst, st, nil
}

// writeParquetFile converts src to dst atomically, as compressFile does.
func writeParquetFile(ctx context.Context, src hourfile.File, dst, host string, opt FileOptions) (st ParquetStats, err error) {
	in, err := hourfile.Open(src.Path)
	if err != nil {
		return st, err
	}
	defer in.Close()
	tmp := dst + hourfile.Tmp
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, opt.FileMode)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	if err := setOwnership(out, opt.FileMode, opt.GID); err != nil {
		return st, err
	}
	if st, err = WriteParquet(out, contextReader{ctx, in}, src.Kind, host); err != nil {
		return st, err
	}
	if err := out.Sync(); err != nil {
		return st, fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return st, fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return st, err
	}
	return st, syncDir(filepath.Dir(dst))
}

// mkdirTree creates the folders of rel under dir that are missing, each with mode and gid.
func mkdirTree(dir, rel string, mode os.FileMode, gid int) error {
	path := dir
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		path = filepath.Join(path, part)
		if err := prepareDir(path, mode, gid); err != nil {
			return err
		}
	}
	return nil
}

// parquetHour writes a closed hour as Parquet, and reports whether its Parquet file is
// whole on disk, so that its CSV may go.
func (w *Writer) parquetHour(ctx context.Context, h hourEntry) bool {
	log := w.log.WithField(fieldFile, h.Path)
	dst, st, err := ConvertHour(ctx, w.cfg.Dir, h.File, w.cfg.Host,
		FileOptions{FileMode: w.cfg.FileMode, DirMode: w.cfg.DirMode, GID: w.gid})
	switch {
	case errors.Is(err, ErrParquetExists):
		// Written by a pass that stopped before its CSV went.
		return true
	case err != nil:
		if ctx.Err() == nil {
			log.WithError(err).Error("writing the hour as Parquet failed; will retry at the next hour")
		}
		return false
	}
	if st.Malformed > 0 {
		log.WithField(fieldDropped, st.Malformed).Warn("rows of the hour that are not valid CSV were left out of its Parquet file")
	}
	log.WithField(fieldParquet, dst).WithField(fieldRows, st.Rows).Info("wrote hour as Parquet")
	return true
}
