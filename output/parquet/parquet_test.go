// SPDX-License-Identifier: Apache-2.0

package parquet

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/internal/rowtest"
	"github.com/threadcap/threadcap/output/schema"
)

func TestMain(m *testing.M) { rowtest.Main(m) }

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
	st, err := Write(f, bytes.NewReader(csv), hourfile.Ticks, "h1")
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
	_, rows := rowtest.ReadParquet(t, path)
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
	st, err := Write(&out, strings.NewReader(csv), hourfile.Samples, "h1")
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
	_, rows := rowtest.ReadParquet(t, path)
	if len(rows) != 2 || rows[0]["thread"] != "=x" || rows[0]["state"] != nil || rows[1]["user_stack"] != nil ||
		rows[0]["sample_time"] != time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC).UnixMicro() ||
		rows[1]["sample_time"] != time.Date(2026, 11, 21, 10, 30, 1, 0, time.UTC).UnixMicro() || rows[1]["pid"] != int32(1) {
		t.Errorf("rows %v", rows)
	}
	if _, err := Write(io.Discard, strings.NewReader("sample_time,mystery\n"), hourfile.Samples, "h1"); err == nil {
		t.Error("a header with a column the schema lacks was converted")
	}
}
