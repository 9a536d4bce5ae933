// SPDX-License-Identifier: Apache-2.0

package html

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/report"
)

func TestHostOfParquetFiles(t *testing.T) {
	dir := "/var/lib/threadcap"
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	parquet := func(host string) string {
		return filepath.Join(dir, hourfile.Samples.ParquetPath(hour, host))
	}
	csv := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.CSV))
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{parquet("db-7")}, "db-7"},
		{[]string{parquet("db-7"), parquet("db-7")}, "db-7"},
		{[]string{parquet("db-7"), parquet("db-8")}, ""},
		{[]string{parquet("db-7"), csv}, ""},
		{[]string{csv}, ""},
	} {
		if got := hostOf(dir, tc.files); got != tc.want {
			t.Errorf("hostOf(%q) = %q, want %q", tc.files, got, tc.want)
		}
	}
}

func TestStepKeepsBucketsFew(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		want   time.Duration
	}{
		{10 * time.Second, 100 * time.Millisecond},
		{2 * time.Minute, time.Second},
		{15 * time.Minute, 10 * time.Second},
		{time.Hour, time.Minute},
		{24 * time.Hour, 15 * time.Minute},
		{30 * 24 * time.Hour, time.Hour},
	} {
		w := report.Window{From: time.Unix(0, 0), To: time.Unix(0, 0).Add(tc.window)}
		if got := Step(w); got != tc.want {
			t.Errorf("Step(%v) = %v, want %v", tc.window, got, tc.want)
		}
	}
}

// A damaged hour (a line cut short, as a crash leaves one) renders what it holds, and the
// header names the file.
func TestDamagedFileRendersWhatItHolds(t *testing.T) {
	dir := writeHour(t, 30, hostileRows)
	samples := filepath.Join(dir, hourfile.Samples.Name(first, hourfile.CSV))
	b, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[10] = lines[10][:len(lines[10])/2] + "\n"
	if err := os.WriteFile(samples, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := build(dir, report.Query{Window: report.Window{From: first, To: first.Add(time.Minute)}}, Options{Host: "h", CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, c := range p.Cube.Cells {
		rows += c[len(c)-2]
	}
	if rows != 149 || p.Empty != "" {
		t.Errorf("the damaged hour gave %d rows (empty: %q); want the 149 undamaged", rows, p.Empty)
	}
	if !strings.Contains(strings.Join(p.Lacks, "\n"), samples) {
		t.Errorf("the header's lacks %q do not name the damaged file", p.Lacks)
	}
}
