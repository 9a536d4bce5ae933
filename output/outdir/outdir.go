// SPDX-License-Identifier: Apache-2.0

// Package outdir makes the files and folders of threadcap's output directory as the config
// says, with its mode and group, and syncs them so that a power loss keeps what was done.
// The Writer and the Parquet conversion both use it.
package outdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Defaults for files and folders when no mode is configured.
const (
	DefaultFileMode os.FileMode = 0o640
	DefaultDirMode  os.FileMode = 0o750
)

// Prepare creates dir with mode if it is missing; an existing dir keeps the mode an
// administrator gave it.
func Prepare(dir string, mode os.FileMode, gid int) error {
	if err := os.Mkdir(dir, mode); err == nil {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("setting mode of %s: %w", dir, err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating output dir: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(dir, -1, gid); err != nil {
			return fmt.Errorf("setting group of %s: %w", dir, err)
		}
	}
	return nil
}

// SetOwnership applies the configured mode, which the umask may have narrowed, and group.
func SetOwnership(f *os.File, mode os.FileMode, gid int) error {
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("setting mode %#o: %w", uint32(mode), err)
	}
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			return fmt.Errorf("setting group %d: %w", gid, err)
		}
	}
	return nil
}

// SyncDir makes a create, rename or remove in dir survive a power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// ContextReader reads r until ctx is done, so that a Close can abandon a compression or a
// conversion between reads.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return contextReader{ctx, r} }

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
