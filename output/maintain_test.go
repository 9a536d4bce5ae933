// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
)

func TestClosedHoursAreCompressed(t *testing.T) {
	tests := []struct {
		compress string
		closed   string // suffix a closed hour ends up with
	}{
		{CompressGzip, ".csv.gz"},
		{CompressZstd, ".csv.zst"},
		{CompressNone, ".csv"},
	}
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.compress, func(t *testing.T) {
			dir := t.TempDir()
			cfg, clock, _ := testConfig(dir, start)
			cfg.Compress = tt.compress
			w := newWriter(t, cfg)
			want := map[string][]byte{}
			for i, suffix := range []string{tt.closed, tt.closed, ".csv"} {
				tick := start.Add(time.Duration(i) * time.Hour)
				clock.Set(tick)
				rows := mysqlRows(tick, int32(10*i), 2)
				if err := w.Write(tick, rows); err != nil {
					t.Fatal(err)
				}
				content := []byte(schema.Header())
				for j := range rows {
					content = schema.AppendCSV(content, &rows[j])
				}
				want[hourfile.Samples.Name(tick.Truncate(time.Hour), suffix)] = content
				want[hourfile.Ticks.Name(tick.Truncate(time.Hour), suffix)] = []byte(schema.TicksHeader() + tick.Local().Format(hourfile.TimeLayout) + "\n")
			}
			w.maintain(context.Background())
			closeWriter(t, w)
			got := map[string][]byte{}
			for _, name := range dirNames(t, dir) {
				got[name] = readPlain(t, filepath.Join(dir, name))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("files after compression:\n got %s\nwant %s", keys(got), keys(want))
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var names []string
	for name, content := range m {
		names = append(names, fmt.Sprintf("%s (%d lines)", name, bytes.Count(content, []byte("\n"))))
	}
	return names
}

// TestStartRecoversLeftovers starts where a crash during compression left off.
func TestStartRecoversLeftovers(t *testing.T) {
	dir := t.TempDir()
	closed := []byte(schema.Header())
	row := mysqlRow(tick, 1)
	closed = schema.AppendCSV(closed, &row)
	files := map[string][]byte{
		"threadcap_samples_2026-11-21T09Z.csv":        closed,
		"threadcap_samples_2026-11-21T09Z.csv.gz.tmp": []byte("half a gzip stream"),
		"threadcap_samples_2026-11-21T12Z.csv":        closed,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, _ := testConfig(dir, time.Date(2026, 11, 21, 12, 10, 0, 0, time.UTC))
	cfg.Compress = CompressGzip
	w := newWriter(t, cfg)
	w.maintain(context.Background())
	closeWriter(t, w)
	want := []string{"threadcap_samples_2026-11-21T09Z.csv.gz", "threadcap_samples_2026-11-21T12Z.csv"}
	if got := dirNames(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("files after start %v, want %v", got, want)
	}
	if got := readPlain(t, filepath.Join(dir, want[0])); !bytes.Equal(got, closed) {
		t.Errorf("compressed leftover holds %q, want %q", got, closed)
	}
}

func TestRetentionDeletesOldestFirst(t *testing.T) {
	// Six hours of 100 bytes each; the clock is in the last, which is never deleted.
	names := []string{
		"threadcap_samples_2026-11-21T06Z.csv.gz",
		"threadcap_samples_2026-11-21T07Z.csv.zst",
		"threadcap_samples_2026-11-21T08Z.csv.gz",
		"threadcap_samples_2026-11-21T09Z.csv.other-schema",
		"threadcap_samples_2026-11-21T10Z.csv",
		"threadcap_samples_2026-11-21T11Z.csv",
	}
	now := time.Date(2026, 11, 21, 11, 30, 0, 0, time.UTC)
	tests := []struct {
		name     string
		maxAge   time.Duration
		maxBytes int64
		kept     []string
	}{
		{"off", 0, 0, names},
		{"by age: whole hours older than 3h", 3 * time.Hour, 0, names[2:]},
		{"by size: oldest until within budget", 0, 250, names[4:]},
		{"both", 3 * time.Hour, 350, names[3:]},
		{"never the current hour", time.Nanosecond, 1, names[5:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range append([]string{"notes.txt"}, names...) {
				if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 100), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			cfg, _, _ := testConfig(dir, now)
			cfg.MaxAge, cfg.MaxBytes = tt.maxAge, tt.maxBytes
			w := newWriter(t, cfg)
			w.maintain(context.Background())
			closeWriter(t, w)
			want := append([]string{"notes.txt"}, tt.kept...)
			if got := dirNames(t, dir); !reflect.DeepEqual(got, want) {
				t.Errorf("kept %v\nwant %v", got, want)
			}
		})
	}
}
