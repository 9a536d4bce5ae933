// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// readParquet reads a Parquet file back: its column names, and its rows as values by
// column name (nil for NULL; int64, int32, bool or string otherwise).
func readParquet(t testing.TB, path string) ([]string, []map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("%s is not a Parquet file: %v", path, err)
	}
	var names []string
	for _, field := range pf.Schema().Fields() {
		names = append(names, field.Name())
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var out []map[string]any
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := map[string]any{}
			for _, v := range row {
				name := names[v.Column()]
				switch {
				case v.IsNull():
					m[name] = nil
				case v.Kind() == parquet.Int64:
					m[name] = v.Int64()
				case v.Kind() == parquet.Int32:
					m[name] = v.Int32()
				case v.Kind() == parquet.Boolean:
					m[name] = v.Boolean()
				default:
					m[name] = string(v.ByteArray())
				}
			}
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return names, out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestParquetSchemaFollowsTheCSVSchema(t *testing.T) {
	for _, kind := range hourfile.Kinds() {
		if len(schema.KindColumns[kind]) == 0 {
			t.Errorf("%s files have no columns in schema.KindColumns: their Parquet would hold only the host", kind)
		}
	}
	for kind, columns := range schema.KindColumns {
		fields := parquetSchema(kind).Fields()
		want := []string{HostColumn}
		for _, c := range columns {
			want = append(want, c.Name)
		}
		var got []string
		for _, f := range fields {
			got = append(got, f.Name())
			if parquetNodes[columnType(columns, f.Name())] == nil && f.Name() != HostColumn {
				t.Errorf("%s: column %s has a type with no Parquet type", kind, f.Name())
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s file's Parquet columns %v, want %v", kind, got, want)
		}
	}
}

func columnType(columns []schema.Column, name string) string {
	for _, c := range columns {
		if c.Name == name {
			return c.Type
		}
	}
	return ""
}

// TestClosedHoursAsParquet checks what each format keeps of closed hours, and that the
// Parquet files hold the CSV's rows, values and all.
func TestClosedHoursAsParquet(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	for _, format := range []string{FormatParquet, FormatBoth} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			cfg, clock, _ := testConfig(dir, start)
			cfg.Format, cfg.Host, cfg.Compress = format, "db-7.example", CompressGzip
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
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
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
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

			names, rows := readParquet(t, filepath.Join(dir, hourfile.Samples.ParquetPath(first, "db-7.example")))
			if len(rows) != len(csvRows)-1 {
				t.Fatalf("%d Parquet rows, want the CSV's %d", len(rows), len(csvRows)-1)
			}
			if names[0] != HostColumn || !reflect.DeepEqual(names[1:], csvRows[0]) {
				t.Errorf("Parquet columns %v, want host and the CSV's %v", names, csvRows[0])
			}
			for i, row := range rows {
				if row[HostColumn] != "db-7.example" {
					t.Errorf("row %d: host %v", i, row[HostColumn])
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
			_, stacks := readParquet(t, filepath.Join(dir, hourfile.Stacks.ParquetPath(first, "db-7.example")))
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

// TestParquetRowGroupsAreBounded checks that a long hour is written in row groups of at
// most parquetRowGroup rows, which bound the writer's memory, and that they hold every row
// in order, malformed ones left out.
func TestParquetRowGroupsAreBounded(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	n := parquetRowGroup + parquetBatch + 7
	csv := []byte(schema.HeaderOf(schema.TickColumns))
	for i := range n {
		if i == parquetBatch/2 {
			csv = append(csv, "not a time\n"...)
		}
		csv = start.Add(time.Duration(i)*time.Millisecond).AppendFormat(csv, hourfile.TimeLayout)
		csv = append(csv, '\n')
	}
	path := filepath.Join(t.TempDir(), "ticks.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := WriteParquet(f, bytes.NewReader(csv), hourfile.Ticks, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != int64(n) || st.Malformed != 1 {
		t.Errorf("stats %+v, want %d rows and 1 malformed", st, n)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.RowGroups()) != 2 {
		t.Errorf("%d row groups, want 2", len(pf.RowGroups()))
	}
	for i, rg := range pf.RowGroups() {
		if rg.NumRows() > parquetRowGroup {
			t.Errorf("row group %d has %d rows, more than %d", i, rg.NumRows(), parquetRowGroup)
		}
	}
	_, rows := readParquet(t, path)
	if len(rows) != n {
		t.Fatalf("%d rows read back, want %d", len(rows), n)
	}
	for i, row := range rows {
		if want := start.Add(time.Duration(i) * time.Millisecond).UnixMicro(); row["sample_time"] != want || row[HostColumn] != "h1" {
			t.Fatalf("row %d is %v, want sample_time %d and host h1", i, row, want)
		}
	}
}

// TestParquetOfAnOlderSchema converts a CSV an older threadcap wrote, with fewer columns:
// the columns it lacks are NULL.
func TestParquetOfAnOlderSchema(t *testing.T) {
	old := schema.Columns[:5]
	csv := schema.HeaderOf(old) + "2026-11-21T05:30:00.000000-05:00,1,2,bash,'=x\n" +
		"2026-11-21T05:30:00.500000-05:00,9,x,bash,sh\n" + // its values before the bad tid go too
		"2026-11-21T05:30:01.000000-05:00,1,2,bash,sh\n" +
		"not a time,1,2,bash,sh\n" +
		"2026-11-21T05:30:02.000000-05:00,1,2"
	var out bytes.Buffer
	st, err := WriteParquet(&out, strings.NewReader(csv), hourfile.Samples, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 2 || st.Malformed != 3 {
		t.Errorf("stats %+v, want 2 rows and 3 malformed (a bad tid, a bad time, a cut last row)", st)
	}
	path := filepath.Join(t.TempDir(), "x.parquet")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rows := readParquet(t, path)
	if len(rows) != 2 || rows[0]["thread"] != "=x" || rows[0]["state"] != nil || rows[1]["user_stack"] != nil ||
		rows[0]["sample_time"] != time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC).UnixMicro() ||
		rows[1]["sample_time"] != time.Date(2026, 11, 21, 10, 30, 1, 0, time.UTC).UnixMicro() || rows[1]["pid"] != int32(1) {
		t.Errorf("rows %v", rows)
	}
	if _, err := WriteParquet(io.Discard, strings.NewReader("sample_time,mystery\n"), hourfile.Samples, "h1"); err == nil {
		t.Error("a header with a column the schema lacks was converted")
	}
}

// TestRetentionDeletesParquetHours checks that max age covers the Parquet tree too, and
// leaves no empty partition folders.
func TestRetentionDeletesParquetHours(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	dir := t.TempDir()
	cfg, clock, _ := testConfig(dir, start)
	cfg.Format, cfg.Host = FormatParquet, "h1"
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
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
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
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
