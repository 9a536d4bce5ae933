// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
)

// ListHourFiles returns the samples files in dir a reader reads, oldest first: for each
// hour, its CSV files (plain or compressed) when it has any, else its Parquet files
// (hourfile.ForReading). An error
// that dir may not be read is an fs.ErrPermission: the directory is right, the user's
// rights are not.
func ListHourFiles(dir string) ([]hourfile.File, error) {
	all, err := hourfile.List(dir)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("listing hour files: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("listing hour files: %w; give the directory threadcap writes to with --dir", err)
	}
	return hourfile.ForReading(all, hourfile.Samples), nil
}

// FilesFor returns the hour files in dir whose hour overlaps w, oldest first, so that a
// report over five minutes opens one or two files, not the whole history. When an hour is
// present both plain and compressed, both are read: the writer leaves that only when the
// clock went back an hour, and then the two hold different rows. An hour kept both as
// CSV and as Parquet (output.format both) is read from its CSV.
func FilesFor(dir string, w Window) ([]hourfile.File, error) {
	all, err := ListHourFiles(dir)
	if err != nil {
		return nil, err
	}
	var files []hourfile.File
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
func tickFilesFor(dir string, files []hourfile.File) (map[time.Time][]string, error) {
	all, err := hourfile.List(dir)
	if err != nil {
		return nil, fmt.Errorf("listing ticks files: %w", err)
	}
	want := map[time.Time]bool{}
	for _, f := range files {
		want[f.Hour] = true
	}
	ticks := map[time.Time][]string{}
	for _, f := range hourfile.ForReading(all, hourfile.Ticks) {
		if want[f.Hour] {
			ticks[f.Hour] = append(ticks[f.Hour], f.Path)
		}
	}
	return ticks, nil
}
