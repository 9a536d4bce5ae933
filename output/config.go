// SPDX-License-Identifier: Apache-2.0

package output

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output/compress"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
	"github.com/threadcap/threadcap/output/parquet"
)

// Compression formats for closed hours.
const (
	CompressGzip = compress.Gzip // the default
	CompressZstd = compress.Zstd
	CompressNone = compress.None
)

// Formats of closed hours. The current hour is always CSV: it is appended to at each tick,
// and what a crash leaves of it is repaired. When it closes, FormatParquet replaces it by
// Parquet, FormatBoth keeps both.
const (
	FormatCSV     = "csv" // the default
	FormatParquet = "parquet"
	FormatBoth    = "both"
)

// Defaults for the zero values of Config.
const (
	DefaultFileMode = outdir.DefaultFileMode
	DefaultDirMode  = outdir.DefaultDirMode
)

// Config says where and how the Writer keeps its files. The zero value of every field but
// Dir is a usable default.
type Config struct {
	Dir      string      // where the hour files go; created if missing
	FileMode os.FileMode // permissions of new files; 0 means DefaultFileMode
	DirMode  os.FileMode // permissions of Dir if it has to be created; 0 means DefaultDirMode
	// Group, a group name or numeric gid, owns Dir and the files when set, so that a DBA
	// group can read them without root.
	Group string
	// Format is what closed hours are kept as: FormatCSV (when ""), FormatParquet or
	// FormatBoth.
	Format string
	// Host names this host in Parquet files and their path; the host name when "".
	Host string
	// Hold, when set, keeps from retention (max age and max bytes) the hour files it holds:
	// Parquet hours not shipped yet.
	Hold func(hourfile.File) bool
	// Compress is how closed hours are compressed: CompressGzip (when ""), CompressZstd or
	// CompressNone.
	Compress string
	// MaxAge deletes an hour file once its last possible row is older than this; 0 keeps
	// files forever.
	MaxAge time.Duration
	// MaxBytes deletes the oldest hour files while all of them together take more than
	// this; 0 means no limit.
	MaxBytes int64
	// MinFreeBytes pauses writing while the file system has less free space than this, so
	// that threadcap never fills the disk a database lives on; 0 pauses only when it is full.
	MinFreeBytes int64
	// FsyncEvery bounds how much a power loss can take; 0 syncs only at each hour's end and
	// at Close.
	FsyncEvery time.Duration
	Clock      func() time.Time // time.Now when nil
	Log        *logrus.Entry    // the "output" component of the standard logger when nil
}

// Validate reports every mistake in c at once; zero values stand for the defaults.
func (c Config) Validate() error {
	var errs []error
	d := c.withDefaults()
	if c.Dir == "" {
		errs = append(errs, errors.New("output dir is not set"))
	}
	if err := CheckFileMode(d.FileMode); err != nil {
		errs = append(errs, fmt.Errorf("file mode %w", err))
	}
	if err := CheckDirMode(d.DirMode); err != nil {
		errs = append(errs, fmt.Errorf("dir mode %w", err))
	}
	if _, err := LookupGroup(c.Group); err != nil {
		errs = append(errs, err)
	}
	if err := CheckCompress(d.Compress); err != nil {
		errs = append(errs, fmt.Errorf("compress %w", err))
	}
	if err := CheckFormat(d.Format); err != nil {
		errs = append(errs, fmt.Errorf("format %w", err))
	}
	if c.Host != "" {
		if err := hourfile.CheckHost(c.Host); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []struct {
		name  string
		value int64
	}{
		{"max age", int64(c.MaxAge)},
		{"max bytes", c.MaxBytes},
		{"min free bytes", c.MinFreeBytes},
		{"fsync every", int64(c.FsyncEvery)},
	} {
		if d.value < 0 {
			errs = append(errs, fmt.Errorf("%s is negative; use 0 to turn it off", d.name))
		}
	}
	return errors.Join(errs...)
}

// CheckFileMode and CheckDirMode reject modes that are not plain permissions, and modes
// that would stop threadcap itself from using its files after dropping privileges.
func CheckFileMode(mode os.FileMode) error { return checkMode(mode, 0o600, "0640") }

func CheckDirMode(mode os.FileMode) error { return checkMode(mode, 0o700, "0750") }

func checkMode(mode, ownerNeeds os.FileMode, like string) error {
	if mode&^os.ModePerm != 0 {
		return fmt.Errorf("%#o has bits other than permissions: write it like %s", uint32(mode), like)
	}
	if mode&ownerNeeds != ownerNeeds {
		return fmt.Errorf("%#o must give the owner at least %#o, like %s", uint32(mode), uint32(ownerNeeds), like)
	}
	return nil
}

// CheckFormat accepts the formats of closed hours.
func CheckFormat(s string) error {
	switch s {
	case FormatCSV, FormatParquet, FormatBoth:
		return nil
	}
	return fmt.Errorf("%q is not one of %s, %s, %s", s, FormatCSV, FormatParquet, FormatBoth)
}

// CheckCompress accepts the compressions of closed hours.
func CheckCompress(s string) error {
	switch s {
	case CompressGzip, CompressZstd, CompressNone:
		return nil
	}
	return fmt.Errorf("%q is not one of %s, %s, %s", s, CompressGzip, CompressZstd, CompressNone)
}

// withDefaults fills in the zero values Validate accepts.
func (c Config) withDefaults() Config {
	if c.FileMode == 0 {
		c.FileMode = DefaultFileMode
	}
	if c.DirMode == 0 {
		c.DirMode = DefaultDirMode
	}
	if c.Compress == "" {
		c.Compress = CompressGzip
	}
	if c.Format == "" {
		c.Format = FormatCSV
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger().WithField(fieldComponent, "output")
	}
	return c
}

// LookupGroup resolves a group name or numeric gid; -1 (leave the group alone) for "".
func LookupGroup(group string) (int, error) {
	if group == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(group); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("no group %q on this machine: create it, use a numeric gid, or leave it empty", group)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q has non-numeric gid %q: %w", group, g.Gid, err)
	}
	return gid, nil
}

// HostName is the host Parquet files are written for: Host, or the host name when unset.
func (c Config) HostName() (string, error) {
	if c.Host != "" {
		return c.Host, hourfile.CheckHost(c.Host)
	}
	return hostName()
}

// FileOptions are the permissions c gives files and folders, for a conversion outside a
// Writer.
func (c Config) FileOptions() (parquet.FileOptions, error) {
	c = c.withDefaults()
	gid, err := LookupGroup(c.Group)
	return parquet.FileOptions{FileMode: c.FileMode, DirMode: c.DirMode, GID: gid}, err
}

// hostName is the host for Parquet files when none is configured.
func hostName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name: %w; set host in the config", err)
	}
	if err := hourfile.CheckHost(h); err != nil {
		return "", fmt.Errorf("the host name cannot name Parquet files: %w; set host in the config", err)
	}
	return h, nil
}
