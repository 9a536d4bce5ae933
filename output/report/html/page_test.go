// SPDX-License-Identifier: Apache-2.0

package html

import (
	"path/filepath"
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
