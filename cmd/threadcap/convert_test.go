// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	parquetgo "github.com/parquet-go/parquet-go"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// TestConvert converts the closed hours of a directory: one an older threadcap wrote
// (fewer columns, gzip), one this one wrote, and not the hour still being written.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	older := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	// Schema version 1 had the first twelve columns.
	var old bytes.Buffer
	zw := gzip.NewWriter(&old)
	header := strings.SplitAfterN(schema.Header(), ",", 13)
	io.WriteString(zw, strings.TrimSuffix(strings.Join(header[:12], ""), ",")+"\n")
	io.WriteString(zw, "2026-11-21T08:00:01.000000+00:00,1,1,init,init,root,sleeping,5,epoll_wait,5,0,0x4 0x0 0x0 0x0 0x0 0x0\n")
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, hourfile.Samples.Name(older, hourfile.Gzip)), old.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	closed := older.Add(time.Hour)
	now := closed.Add(time.Hour + 30*time.Minute)
	w, err := output.New(output.Config{Dir: dir, Compress: output.CompressZstd, Clock: func() time.Time { return closed }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tick := range []time.Time{closed, closed.Add(time.Second), now} {
		row := state.Sample{Time: tick, Pid: 2, Tid: 3, Process: "-rm -rf", Thread: "t", State: state.OnCPU,
			StateUs: state.Unknown, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown}
		if err := w.Write(tick, []state.Sample{row, row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := convertConfig{Dir: dir, Out: dir, Host: "h1", Files: parquet.FileOptions{GID: -1}}
	var out strings.Builder
	if err := runConvert(context.Background(), cfg, now, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	want := map[string]int64{
		hourfile.Samples.ParquetPath(older, "h1"):  1,
		hourfile.Samples.ParquetPath(closed, "h1"): 4,
		hourfile.Ticks.ParquetPath(closed, "h1"):   2,
	}
	var got int
	for _, f := range mustList(t, dir) {
		if f.Suffix != hourfile.Parquet {
			continue
		}
		got++
		rows, ok := want[f.String()]
		if n := parquetRows(t, f.Path); !ok || n != rows {
			t.Errorf("%s: %d rows, want %d (listed: %v)", f.String(), n, rows, ok)
		}
	}
	if got != len(want) {
		t.Errorf("%d Parquet files, want %d:\n%s", got, len(want), out.String())
	}
	out.Reset()
	if err := runConvert(context.Background(), cfg, now, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 hour files converted, 3 already had a Parquet file, 0 failed") {
		t.Errorf("a second run: %s", out.String())
	}
}

func TestParseConvertFlags(t *testing.T) {
	cfg, err := parseConvertFlags([]string{"--config", "", "--dir", "/srv/tc", "--host", "db-1"}, io.Discard)
	if err != nil || cfg.Dir != "/srv/tc" || cfg.Out != "/srv/tc" || cfg.Host != "db-1" {
		t.Errorf("got %+v, %v", cfg, err)
	}
	if _, err := parseConvertFlags([]string{"--config", "", "--host", "a/b"}, io.Discard); err == nil {
		t.Error("a host that cannot name a file was taken")
	}
}

func mustList(t *testing.T, dir string) []hourfile.File {
	t.Helper()
	files, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func parquetRows(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquetgo.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf.NumRows()
}
