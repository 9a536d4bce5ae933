// SPDX-License-Identifier: Apache-2.0

// Package hourfile is the format of threadcap's hour files, which the writer (output) and
// every reader (output/report) use: the kinds of file, their names, listing a directory's,
// the layout of times in them and the rules text fields follow.
//
// Names are threadcap_<kind>_<UTC hour>Z<suffix>, for example
// threadcap_samples_2026-11-21T14Z.csv. The hour is UTC so that names sort chronologically
// as text and never repeat when the local clock falls back an hour, and the same name means
// the same hour on servers in different time zones. Rows inside still carry local time.
//
// A closed hour may also be kept as Parquet, in a hive-partitioned tree under the same
// directory that an object store holds as it is (see ParquetPath):
//
//	parquet/kind=samples/date=2026-11-21/hour=14/<host>.parquet
package hourfile

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Kind is one series of hour files. Every kind is rotated, compressed and deleted like the
// samples.
type Kind struct{ name, prefix string }

// The kinds of hour file. A new kind is one more line here.
var (
	// Samples holds the rows.
	Samples = newKind("samples")
	// Stacks holds each hour's stacks, which rows refer to by hash.
	Stacks = newKind("stacks")
	// Ticks holds the times of each hour's ticks, rows or not.
	Ticks = newKind("ticks")
	// IO holds each minute's completed block requests per disk and operation.
	IO = newKind("io")
	// Spans holds, per minute and span, the spans that ended and where their time went.
	Spans = newKind("spans")
	// Profile holds, per minute, thread and pair of stacks, the CPU profile's samples.
	Profile = newKind("profile")
)

// kinds are all the kinds, in the order they are declared.
var kinds []Kind

func newKind(name string) Kind {
	k := Kind{name: name, prefix: "threadcap_" + name + "_"}
	kinds = append(kinds, k)
	return k
}

// Kinds are all the kinds, in the order they are declared.
func Kinds() []Kind { return slices.Clone(kinds) }

// String is the kind's name, such as samples: the kind= of its Parquet files.
func (k Kind) String() string { return k.name }

// Prefix is what the names of the kind's files start with.
func (k Kind) Prefix() string { return k.prefix }

// Name is the file name of the kind for the hour starting at hour, with suffix.
func (k Kind) Name(hour time.Time, suffix string) string {
	return k.prefix + hour.UTC().Format(HourLayout) + suffix
}

// HourLayout is the hour in a file name.
const HourLayout = "2006-01-02T15Z"

// Suffixes: the current hour is plain and closed hours compressed.
const (
	CSV  = ".csv"
	Gzip = ".csv.gz"
	Zstd = ".csv.zst"
	// Tmp is added to a compressed copy until it is whole.
	Tmp = ".tmp"
	// OtherSchema is given to a current-hour file found with a header threadcap does not
	// write (another schema version), so that new rows never go under the wrong header.
	OtherSchema = ".csv.other-schema"
	// NotAFile is given to a symlink, FIFO or device found under an hour file's name.
	NotAFile = ".csv.not-a-file"
)

// Parquet is the suffix of an hour's Parquet file (and Parquet+Tmp of one being written).
const Parquet = ".parquet"

// ReadableSuffixes are those of files a reader reads: not the .tmp copies compression
// writes, nor files set aside.
var ReadableSuffixes = []string{CSV, Gzip, Zstd}

// Name is what an hour file's name says.
type Name struct {
	Kind   Kind
	Hour   time.Time // UTC
	Suffix string
	// Host is the host of a Parquet file (Suffix Parquet, or Parquet+Tmp), "" for the
	// others: its name is its path in the Parquet tree, of which the host is a part.
	Host string
}

// String is the file's name, its path under the directory for a Parquet file;
// Parse(n.String()) is n.
func (n Name) String() string {
	if n.Host != "" {
		return n.Kind.ParquetPath(n.Hour, n.Host) + strings.TrimPrefix(n.Suffix, Parquet)
	}
	return n.Kind.Name(n.Hour, n.Suffix)
}

// Readable reports whether a reader reads the file: see ReadableSuffixes.
func (n Name) Readable() bool { return slices.Contains(ReadableSuffixes, n.Suffix) }

// IsParquet reports whether the file is a whole Parquet file, not one being written.
func (n Name) IsParquet() bool { return n.Suffix == Parquet }

// Parse is the inverse of Kind.Name, for any suffix; ok is false for files threadcap did
// not name, so that retention never deletes them.
func Parse(name string) (n Name, ok bool) {
	if strings.HasPrefix(name, ParquetDir+"/") {
		return parseParquet(name)
	}
	for _, k := range kinds {
		rest, found := strings.CutPrefix(name, k.prefix)
		if !found {
			continue
		}
		if len(rest) < len(HourLayout) {
			return Name{}, false
		}
		hour, err := time.Parse(HourLayout, rest[:len(HourLayout)])
		if err != nil {
			return Name{}, false
		}
		return Name{Kind: k, Hour: hour, Suffix: rest[len(HourLayout):]}, true
	}
	return Name{}, false
}

// File is one hour file in a directory.
type File struct {
	Name
	Path string
}

// List returns the hour files of every kind in dir, of any suffix, regular files only,
// the Parquet tree's among them, oldest hour first. The error is os.ReadDir's on dir; a
// Parquet tree that cannot be read lists no Parquet files.
func List(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range entries {
		if n, ok := Parse(e.Name()); ok && e.Type().IsRegular() {
			files = append(files, File{Name: n, Path: filepath.Join(dir, e.Name())})
		}
	}
	files = append(files, listParquet(dir)...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Hour.Before(files[j].Hour) })
	return files, nil
}

// ForReading returns the files of kind among files (as List returns them) that a reader
// reads, oldest hour first: for each hour, its CSV files (plain or compressed; both when
// the clock went back an hour, and then they hold different rows) when it has any, else
// its Parquet files. output.format parquet leaves a closed hour as Parquet only; both
// leaves the same rows in the two formats, read once.
func ForReading(files []File, kind Kind) []File {
	csv := map[time.Time]bool{}
	for _, f := range files {
		if f.Kind == kind && f.Readable() {
			csv[f.Hour] = true
		}
	}
	var out []File
	for _, f := range files {
		if f.Kind == kind && (f.Readable() || f.IsParquet() && !csv[f.Hour]) {
			out = append(out, f)
		}
	}
	return out
}

// ParsePath is what the path of an hour file says: the directory threadcap wrote it in
// and its name, for a Parquet file too (whose name is its path in the Parquet tree).
func ParsePath(path string) (dir string, n Name, ok bool) {
	dir, base := filepath.Split(path)
	if strings.HasSuffix(base, Parquet) {
		// parquet/kind=K/date=D/hour=H/host.parquet
		tree := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Clean(dir))))
		rel, err := filepath.Rel(filepath.Dir(tree), path)
		if err != nil {
			return "", Name{}, false
		}
		n, ok = Parse(filepath.ToSlash(rel))
		return filepath.Dir(tree), n, ok
	}
	n, ok = Parse(base)
	return filepath.Clean(dir), n, ok
}
