// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Hour files are named as output.Writer names them: threadcap_samples_<UTC hour>Z<suffix>,
// the current hour plain and closed hours compressed. A test writes files with
// output.Writer and finds them here, so the two cannot drift apart.
const (
	namePrefix  = "threadcap_samples_"
	ticksPrefix = "threadcap_ticks_"
	hourLayout  = "2006-01-02T15Z"
	suffixCSV   = ".csv"
	suffixGzip  = ".csv.gz"
	suffixZstd  = ".csv.zst"
)

// HourFile is one hour file in a directory.
type HourFile struct {
	Path string
	Hour time.Time // the UTC hour its rows belong to
}

// ParseHourName reads the hour and suffix out of an hour file's name. ok is false for any
// other file, including the .tmp copies compression writes and files set aside with
// another schema.
func ParseHourName(name string) (hour time.Time, suffix string, ok bool) {
	return parseName(name, namePrefix)
}

// parseName is ParseHourName for the files whose names start with prefix.
func parseName(name, prefix string) (hour time.Time, suffix string, ok bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found || len(rest) < len(hourLayout) {
		return time.Time{}, "", false
	}
	hour, err := time.Parse(hourLayout, rest[:len(hourLayout)])
	if err != nil {
		return time.Time{}, "", false
	}
	switch suffix = rest[len(hourLayout):]; suffix {
	case suffixCSV, suffixGzip, suffixZstd:
		return hour, suffix, true
	}
	return time.Time{}, "", false
}

// hourName is the name of the hour file for hour with suffix.
func hourName(hour time.Time, suffix string) string {
	return namePrefix + hour.UTC().Format(hourLayout) + suffix
}

// ListHourFiles returns the hour files in dir, oldest first. An error that dir may not be
// read is an fs.ErrPermission: the directory is right, the user's rights are not.
func ListHourFiles(dir string) ([]HourFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("listing hour files: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("listing hour files: %w; give the directory threadcap writes to with --dir", err)
	}
	var files []HourFile
	for _, e := range entries {
		if hour, _, ok := ParseHourName(e.Name()); ok && e.Type().IsRegular() {
			files = append(files, HourFile{Path: filepath.Join(dir, e.Name()), Hour: hour})
		}
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Hour.Before(files[j].Hour) })
	return files, nil
}

// FilesFor returns the hour files in dir whose hour overlaps w, oldest first, so that a
// report over five minutes opens one or two files, not the whole history. When an hour is
// present both plain and compressed, both are read: the writer leaves that only when the
// clock went back an hour, and then the two hold different rows.
func FilesFor(dir string, w Window) ([]HourFile, error) {
	all, err := ListHourFiles(dir)
	if err != nil {
		return nil, err
	}
	var files []HourFile
	for _, f := range all {
		if f.Hour.Before(w.To) && f.Hour.Add(time.Hour).After(w.From) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		if len(all) == 0 {
			return nil, fmt.Errorf("no threadcap hour files in %s; give the directory threadcap writes to with --dir", dir)
		}
		return nil, fmt.Errorf("no hour file in %s covers %s to %s; the files there cover %s to %s",
			dir, w.From.Format(time.RFC3339), w.To.Format(time.RFC3339),
			all[0].Hour.Local().Format(time.RFC3339), all[len(all)-1].Hour.Add(time.Hour).Local().Format(time.RFC3339))
	}
	return files, nil
}

// tickFilesFor returns, by hour, the ticks files in dir of the hours of files. Each holds
// the time of every tick of its hour, rows or not; hours written before threadcap kept
// them have none.
func tickFilesFor(dir string, files []HourFile) (map[time.Time][]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing ticks files: %w", err)
	}
	want := map[time.Time]bool{}
	for _, f := range files {
		want[f.Hour] = true
	}
	ticks := map[time.Time][]string{}
	for _, e := range entries {
		if hour, _, ok := parseName(e.Name(), ticksPrefix); ok && want[hour] && e.Type().IsRegular() {
			ticks[hour] = append(ticks[hour], filepath.Join(dir, e.Name()))
		}
	}
	return ticks, nil
}

// openHourFile opens an hour file for reading, decompressing by suffix. The current hour's
// plain file may be growing while it is read; the record reader ignores a last row the
// writer has not finished.
func openHourFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	switch {
	case strings.HasSuffix(path, suffixGzip):
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return readCloser{zr, func() error { return errors.Join(zr.Close(), f.Close()) }}, nil
	case strings.HasSuffix(path, suffixZstd):
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
