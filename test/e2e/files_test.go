// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/schema"
)

// row is one CSV row by column name.
type row map[string]string

// hourFiles reads every hour file in dir, oldest first, decompressing closed hours.
func hourFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv*"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		files[name] = data
	}
	return files
}

// rowsSoFar parses the whole lines written so far, while threadcap may be writing more.
func rowsSoFar(t *testing.T, dir string) []row {
	t.Helper()
	var rows []row
	for _, data := range hourFiles(t, dir) {
		data = data[:bytes.LastIndexByte(data, '\n')+1]
		rows = append(rows, parseRows(t, data)...)
	}
	return rows
}

// validRows checks that every file is complete, valid CSV: the header, then whole rows of
// every column, ending in a newline, and returns the rows.
func validRows(t *testing.T, dir string) []row {
	t.Helper()
	files := hourFiles(t, dir)
	if len(files) == 0 {
		t.Fatal("no hour file written")
	}
	var rows []row
	for name, data := range files {
		if !bytes.HasPrefix(data, []byte(schema.Header())) {
			t.Errorf("%s does not start with the header", name)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Errorf("%s ends in a partial row: %q", name, data[bytes.LastIndexByte(data, '\n')+1:])
		}
		rows = append(rows, parseRows(t, data)...)
	}
	return rows
}

func parseRows(t *testing.T, data []byte) []row {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = len(schema.Columns)
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("not valid CSV: %v", err)
	}
	if len(records) == 0 {
		return nil
	}
	header := records[0]
	var rows []row
	for _, rec := range records[1:] {
		rw := row{}
		for i, name := range header {
			rw[name] = rec[i]
		}
		if _, err := time.Parse(time.RFC3339Nano, rw["sample_time"]); err != nil {
			t.Fatalf("row %v: bad sample_time: %v", rec, err)
		}
		rows = append(rows, rw)
	}
	return rows
}

// sampleTimes are the distinct tick times of rows, in order.
func sampleTimes(t *testing.T, rows []row) []time.Time {
	t.Helper()
	var times []time.Time
	for _, r := range rows {
		ts, _ := time.Parse(time.RFC3339Nano, r["sample_time"])
		if len(times) == 0 || !ts.Equal(times[len(times)-1]) {
			times = append(times, ts)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
}
