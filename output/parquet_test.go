// SPDX-License-Identifier: Apache-2.0

package output

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/internal/rowtest"
	"github.com/threadcap/threadcap/state"
)

// TestClosedHoursAsParquet checks what each format keeps of closed hours, and that the
// Parquet files hold the CSV's rows, values and all.
func TestClosedHoursAsParquet(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	for _, format := range []string{FormatParquet, FormatBoth} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			cfg, clock, _ := testConfig(dir, start)
			cfg.Format, cfg.Host, cfg.Compress = format, "db-7.example", CompressGzip
			w := newWriter(t, cfg)
			var csvRows [][]string
			for i := range 3 {
				tick := start.Add(time.Duration(i) * time.Hour)
				clock.Set(tick)
				rows := mysqlRows(tick, int32(10*i), 3)
				rows[0].Process, rows[0].Thread = "=cmd|' /C calc'!A0", "tab\there, \"quoted\""
				rows[1].StateUs, rows[1].CPU, rows[1].Seeded = state.Unknown, state.Unknown, true
				rows[2].KernelStack = &state.Stack{Hash: "k1", Frames: "entry;do_sys;io_schedule"}
				if err := w.Write(tick, rows); err != nil {
					t.Fatal(err)
				}
				profile := []state.ProfileRow{{Minute: tick, Pid: 10, Tid: 11, Process: "app", Thread: "w", UserStack: rows[2].KernelStack, Samples: 3, Hz: 99}}
				if err := w.WriteProfile(tick, profile); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					csvRows = readCSV(t, filepath.Join(dir, hourfile.Samples.Name(tick.Truncate(time.Hour), hourfile.CSV)))
				}
			}
			w.maintain(context.Background())
			closeWriter(t, w)
			first := start.Truncate(time.Hour)
			for i := range 2 {
				hour := first.Add(time.Duration(i) * time.Hour)
				for _, kind := range hourfile.Kinds() {
					if kind == hourfile.IO || kind == hourfile.Spans {
						continue // written only for minutes with block requests, or spans
					}
					path := filepath.Join(dir, kind.ParquetPath(hour, "db-7.example"))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("closed hour %v: %v", hour, err)
					}
					_, csvErr := os.Stat(filepath.Join(dir, kind.Name(hour, hourfile.Gzip)))
					if keep := format == FormatBoth; keep != (csvErr == nil) {
						t.Errorf("%s of %v kept as CSV: %v, want %v", kind, hour, csvErr == nil, keep)
					}
				}
			}
			current := first.Add(2 * time.Hour)
			if _, err := os.Stat(filepath.Join(dir, hourfile.Samples.Name(current, hourfile.CSV))); err != nil {
				t.Errorf("the current hour's CSV: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, hourfile.Samples.ParquetPath(current, "db-7.example"))); err == nil {
				t.Error("the current hour was written as Parquet")
			}

			names, rows := rowtest.ReadParquet(t, filepath.Join(dir, hourfile.Samples.ParquetPath(first, "db-7.example")))
			if len(rows) != len(csvRows)-1 {
				t.Fatalf("%d Parquet rows, want the CSV's %d", len(rows), len(csvRows)-1)
			}
			if names[0] != hourfile.HostColumn || !reflect.DeepEqual(names[1:], csvRows[0]) {
				t.Errorf("Parquet columns %v, want host and the CSV's %v", names, csvRows[0])
			}
			for i, row := range rows {
				if row[hourfile.HostColumn] != "db-7.example" {
					t.Errorf("row %d: host %v", i, row[hourfile.HostColumn])
				}
				for j, name := range csvRows[0] {
					if got, want := asCSV(t, row[name]), string(hourfile.Unguard([]byte(csvRows[i+1][j]))); got != want {
						t.Errorf("row %d, %s: Parquet %q, CSV %q", i, name, got, want)
					}
				}
			}
			if rows[0]["process"] != "=cmd|' /C calc'!A0" || rows[0]["thread"] != "tab\there, \"quoted\"" {
				t.Errorf("hostile names came back as %q and %q", rows[0]["process"], rows[0]["thread"])
			}
			if rows[1]["state_us"] != nil || rows[1]["cpu"] != nil || rows[1]["seeded"] != true {
				t.Errorf("unknown values came back as %v, %v; seeded %v", rows[1]["state_us"], rows[1]["cpu"], rows[1]["seeded"])
			}
			_, stacks := rowtest.ReadParquet(t, filepath.Join(dir, hourfile.Stacks.ParquetPath(first, "db-7.example")))
			if len(stacks) != 1 || stacks[0]["hash"] != "k1" || stacks[0]["frames"] != "entry;do_sys;io_schedule" {
				t.Errorf("stacks %v", stacks)
			}
		})
	}
}

// asCSV writes a Parquet value as the CSV does, for comparing the two.
func asCSV(t *testing.T, v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case int64:
		// Only sample_time is this large; the others are counts and µs.
		if v > 1e15 {
			return time.UnixMicro(v).Local().Format(hourfile.TimeLayout)
		}
		return itoa(v)
	case int32:
		return itoa(int64(v))
	case bool:
		if v {
			return "true"
		}
		return "false"
	case string:
		return v
	}
	t.Fatalf("unexpected value %T", v)
	return ""
}

// itoa writes v as AppendCSV writes a number: state.Unknown as an empty field.
func itoa(v int64) string {
	if v == state.Unknown {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

// TestRetentionDeletesParquetHours checks that max age covers the Parquet tree too, and
// leaves no empty partition folders.
func TestRetentionDeletesParquetHours(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	dir := t.TempDir()
	cfg, clock, _ := testConfig(dir, start)
	cfg.Format, cfg.Host = FormatParquet, "h1"
	w := newWriter(t, cfg)
	defer w.Close()
	for i := range 2 {
		tick := start.Add(time.Duration(i) * time.Hour)
		clock.Set(tick)
		if err := w.Write(tick, mysqlRows(tick, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	w.maintain(context.Background())
	first := filepath.Join(dir, hourfile.Samples.ParquetPath(start, "h1"))
	if _, err := os.Stat(first); err != nil {
		t.Fatal(err)
	}
	w.cfg.MaxAge = time.Hour
	clock.Set(start.Add(2 * time.Hour))
	w.maintain(context.Background())
	if _, err := os.Stat(filepath.Dir(first)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired hour's folder: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, hourfile.ParquetDir)); err != nil {
		t.Errorf("the tree's top: %v", err)
	}
}

// TestRetentionKeepsHeldHours: an hour Hold keeps (not shipped yet) outlives max age.
func TestRetentionKeepsHeldHours(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	dir := t.TempDir()
	cfg, clock, _ := testConfig(dir, start)
	// The writer's own maintenance, started when an hour closes, asks too.
	var shipped atomic.Bool
	cfg.Format, cfg.Host, cfg.MaxAge = FormatParquet, "h1", time.Hour
	cfg.Hold = func(f hourfile.File) bool { return f.Suffix == hourfile.Parquet && !shipped.Load() }
	w := newWriter(t, cfg)
	defer w.Close()
	for i := range 3 {
		tick := start.Add(time.Duration(i) * time.Hour)
		clock.Set(tick)
		if err := w.Write(tick, mysqlRows(tick, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	w.maintain(context.Background())
	first := filepath.Join(dir, hourfile.Samples.ParquetPath(start, "h1"))
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("an hour past max age, not shipped: %v", err)
	}
	shipped.Store(true)
	w.maintain(context.Background())
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shipped hour past max age: %v, want it deleted", err)
	}
}
