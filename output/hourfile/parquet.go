// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// ParquetDir is the top of the Parquet tree in the output directory.
const ParquetDir = "parquet"

// The partitions of the tree, in the order of the path. date and hour are the UTC hour's,
// like the CSV names, so that every host's files of one hour share a folder.
const (
	partitionDate = "2006-01-02"
	partitionHour = "15"
)

// ParquetPath is where the kind's Parquet file of host for the hour starting at hour lives,
// relative to the output directory, with / separators: the same path is the object's key
// under a bucket's prefix. Engines that read hive partitions (DuckDB's hive_partitioning,
// ClickHouse's, Trino's, Spark's) see kind, date and hour as columns.
func (k Kind) ParquetPath(hour time.Time, host string) string {
	h := hour.UTC()
	return path.Join(ParquetDir, "kind="+k.name, "date="+h.Format(partitionDate),
		"hour="+h.Format(partitionHour), host+Parquet)
}

// parseParquet is the inverse of ParquetPath, for the suffixes Parquet and Parquet+Tmp.
func parseParquet(name string) (Name, bool) {
	parts := strings.Split(name, "/")
	if len(parts) != 5 || parts[0] != ParquetDir {
		return Name{}, false
	}
	kindName, ok1 := strings.CutPrefix(parts[1], "kind=")
	date, ok2 := strings.CutPrefix(parts[2], "date=")
	hh, ok3 := strings.CutPrefix(parts[3], "hour=")
	if !ok1 || !ok2 || !ok3 {
		return Name{}, false
	}
	hour, err := time.Parse(partitionDate+"T"+partitionHour, date+"T"+hh)
	if err != nil {
		return Name{}, false
	}
	for _, suffix := range []string{Parquet, Parquet + Tmp} {
		host, found := strings.CutSuffix(parts[4], suffix)
		if !found || CheckHost(host) != nil {
			continue
		}
		for _, k := range kinds {
			// Only what ParquetPath writes: time.Parse would take hour=3 too.
			if k.name == kindName && k.ParquetPath(hour, host)+suffix[len(Parquet):] == name {
				return Name{Kind: k, Hour: hour, Suffix: suffix, Host: host}, true
			}
		}
	}
	return Name{}, false
}

// maxHost is a DNS name's longest.
const maxHost = 253

// CheckHost says whether host can name Parquet files: a file name and an object key that
// no shell, URL or engine quotes differently, letters, digits, '.', '-' and '_', not
// starting with '.'. Host names are (RFC 1123), so this refuses only a name configured
// by mistake.
func CheckHost(host string) error {
	if host == "" || len(host) > maxHost || host[0] == '.' {
		return fmt.Errorf("host %q must be 1 to %d characters, not starting with '.'", host, maxHost)
	}
	for _, c := range []byte(host) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("host %q may hold letters, digits, '.', '-' and '_' only", host)
		}
	}
	return nil
}

// listParquet lists the Parquet tree's hour files, regular files only. Whatever in the tree
// does not have a name ParquetPath gives is left out, as in the directory.
func listParquet(dir string) []File {
	var files []File
	root := filepath.Join(dir, ParquetDir)
	// Errors (no tree, an unreadable folder) leave out what cannot be read.
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		if n, ok := parseParquet(filepath.ToSlash(rel)); ok {
			files = append(files, File{Name: n, Path: p})
		}
		return nil
	})
	return files
}

// RemoveEmptyParquetDirs removes the folders of path's partitions that deleting path left
// empty, up to the tree's top, so that retention leaves no empty hours behind.
func RemoveEmptyParquetDirs(dir, path string) {
	root := filepath.Join(dir, ParquetDir)
	for d := filepath.Dir(path); strings.HasPrefix(d, root+string(os.PathSeparator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return // not empty, or gone
		}
	}
}
