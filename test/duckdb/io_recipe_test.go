// SPDX-License-Identifier: Apache-2.0

package duckdb_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// TestIORecipe runs the io recipe on io files the writer wrote about known minutes: the
// slowest disk of each minute, by its average time at the device. The view's columns are
// the io files'.
func TestIORecipe(t *testing.T) {
	var r recipe
	for _, rc := range recipes(t) {
		if rc.readsIO() {
			r = rc
		}
	}
	if r.sql == "" {
		t.Fatal("no recipe reads the io files")
	}
	var want []string
	for _, c := range schema.IOColumns {
		want = append(want, "'"+c.Name+"':'"+c.Type+"'")
	}
	if compact := strings.Join(strings.Fields(r.sql), ""); !strings.Contains(compact, "columns={"+strings.Join(want, ",")+"}") {
		t.Errorf("recipes/%s.sql's io view does not list schema.IOColumns: %s", r.name, strings.Join(want, ", "))
	}

	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 3, 10, 0, 0, time.Local)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return first }})
	if err != nil {
		t.Fatal(err)
	}
	disk := func(name string, op state.IOOp, requests, deviceMs uint64) state.DiskIO {
		return state.DiskIO{Disk: name, Op: op, IOStat: state.IOStat{
			Requests: requests, Bytes: requests * 4096, QueueNs: requests * 10_000, DeviceNs: requests * deviceMs * 1_000_000,
		}}
	}
	minutes := map[int][]state.DiskIO{
		0: {disk("vda", state.IORead, 100, 2), disk("loop0", state.IORead, 10, 1)},
		// loop0's reads are slow, its writes fast: 10 reads of 50 ms, 30 writes of 10 ms.
		1: {disk("vda", state.IORead, 100, 2), disk("loop0", state.IORead, 10, 50), disk("loop0", state.IOWrite, 30, 10)},
		2: {disk("vda", state.IOWrite, 200, 4), disk("nvme0n1", state.IORead, 500, 1)},
		5: {disk("nvme0n1", state.IORead, 1, 999)}, // outside the window
	}
	tick := func(m int) time.Time { return first.Add(time.Duration(m) * time.Minute) }
	if err := w.Write(tick(0), nil); err != nil {
		t.Fatal(err)
	}
	for m := range 6 {
		if err := w.WriteIO(tick(m), minutes[m]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sql := strings.NewReplacer(
		exampleIO, "'"+filepath.Join(dir, "threadcap_io_*.csv*")+"'",
		exampleFrom, "'"+first.Format("2006-01-02 15:04:05-07:00")+"'",
		exampleTo, "'"+tick(5).Format("2006-01-02 15:04:05-07:00")+"'").Replace(r.sql)
	got := run(t, duckConn(t), sql)
	type slowest struct {
		disk     string
		deviceMs float64
	}
	wantRows := []slowest{{"vda", 2}, {"loop0", 20}, {"vda", 4}}
	if len(got) != len(wantRows) {
		t.Fatalf("slowest disks %v, want one a minute: %v", got, wantRows)
	}
	for i, row := range got {
		if s := (slowest{str(row["disk"]), num(row["device_ms"])}); s != wantRows[i] {
			t.Errorf("minute %d: %v, want %+v", i, row, wantRows[i])
		}
	}
}
