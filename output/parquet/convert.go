// SPDX-License-Identifier: Apache-2.0

package parquet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
)

// ErrExists is returned by ConvertHour when the hour's Parquet file is there already.
var ErrExists = errors.New("the hour's Parquet file exists")

// FileOptions are the permissions of the files and folders a conversion creates.
type FileOptions struct {
	FileMode os.FileMode // outdir.DefaultFileMode when 0
	DirMode  os.FileMode // outdir.DefaultDirMode when 0
	GID      int         // the group to give them; -1 leaves it alone
}

// ConvertHour writes the closed hour file src (plain or compressed CSV) as Parquet at its
// place in dir's Parquet tree (hourfile.ParquetPath), for host, and returns its path. It
// is written under a .tmp name, synced, then renamed, so that the tree never holds half a
// file under a final name; an existing file is left alone (ErrExists).
func ConvertHour(ctx context.Context, dir string, src hourfile.File, host string, opt FileOptions) (string, Stats, error) {
	if opt.FileMode == 0 {
		opt.FileMode = outdir.DefaultFileMode
	}
	if opt.DirMode == 0 {
		opt.DirMode = outdir.DefaultDirMode
	}
	rel := src.Kind.ParquetPath(src.Hour, host)
	dst := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Lstat(dst); err == nil {
		return dst, Stats{}, ErrExists
	}
	if err := mkdirTree(dir, filepath.Dir(rel), opt.DirMode, opt.GID); err != nil {
		return dst, Stats{}, err
	}
	st, err := writeParquetFile(ctx, src, dst, host, opt)
	if err != nil {
		return dst, st, fmt.Errorf("writing %s: %w", dst, err)
	}
	return dst, st, nil
}

// writeParquetFile converts src to dst atomically, as compress.Hour compresses an hour.
func writeParquetFile(ctx context.Context, src hourfile.File, dst, host string, opt FileOptions) (st Stats, err error) {
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
	if err := outdir.SetOwnership(out, opt.FileMode, opt.GID); err != nil {
		return st, err
	}
	if st, err = Write(out, outdir.ContextReader(ctx, in), src.Kind, host); err != nil {
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
	return st, outdir.SyncDir(filepath.Dir(dst))
}

// mkdirTree creates the folders of rel under dir that are missing, each with mode and gid.
func mkdirTree(dir, rel string, mode os.FileMode, gid int) error {
	path := dir
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		path = filepath.Join(path, part)
		if err := outdir.Prepare(path, mode, gid); err != nil {
			return err
		}
	}
	return nil
}
