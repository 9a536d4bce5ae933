// SPDX-License-Identifier: Apache-2.0

package output

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// The io file of an hour holds its minutes' rows, and the next hour's go to the next
// hour's file, which is compressed with the samples once that hour is over.
func TestIOFileFollowsTheHour(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 21, 14, 58, 0, 0, time.UTC)
	cfg, clock, _ := testConfig(dir, start)
	cfg.Compress = CompressGzip
	w := newWriter(t, cfg)
	read := state.DiskIO{Disk: "nvme0n1", Op: state.IORead, IOStat: state.IOStat{
		Requests: 3, Bytes: 12288, QueueNs: 4500, DeviceNs: 2_000_000,
	}}
	read.QueueHist[0], read.QueueHist[2] = 2, 1
	read.DeviceHist[10] = 3
	write := state.DiskIO{Disk: "=vdb", Op: state.IOWrite}
	write.Requests, write.QueueHist[0], write.DeviceHist[0] = 1, 1, 1
	minutes := []time.Time{start, start.Add(time.Minute), start.Add(2 * time.Minute)}
	for _, m := range minutes {
		clock.Set(m)
		if err := w.Write(m, mysqlRows(m, 1, 1)); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteIO(m.Add(-time.Minute), []state.DiskIO{read, write}); err != nil {
			t.Fatal(err)
		}
	}
	// The hour once over is compressed, its io file with the rest, in the background.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "threadcap_io_2026-11-21T14Z.csv.gz")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the closed hour's io file was not compressed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	closeWriter(t, w)
	first := readCSV(t, filepath.Join(dir, "threadcap_io_2026-11-21T14Z.csv.gz"))
	want := [][]string{
		{"minute", "disk", "op", "requests", "bytes", "queue_us", "device_us", "queue_hist", "device_hist"},
		{minutes[0].Add(-time.Minute).Local().Format(hourfile.TimeLayout), "nvme0n1", "read", "3", "12288", "4", "2000", "2 0 1", "0 0 0 0 0 0 0 0 0 0 3"},
		{minutes[0].Add(-time.Minute).Local().Format(hourfile.TimeLayout), "'=vdb", "write", "1", "0", "0", "0", "1", "1"},
	}
	want = append(want, want[1], want[2])
	want[3] = append([]string{minutes[1].Add(-time.Minute).Local().Format(hourfile.TimeLayout)}, want[1][1:]...)
	want[4] = append([]string{minutes[1].Add(-time.Minute).Local().Format(hourfile.TimeLayout)}, want[2][1:]...)
	if !reflect.DeepEqual(first, want) {
		t.Errorf("first hour's io file:\n got %q\nwant %q", first, want)
	}
	if second := readCSV(t, filepath.Join(dir, "threadcap_io_2026-11-21T15Z.csv")); len(second) != 3 {
		t.Errorf("second hour's io file has %d lines, want a header and 2 rows", len(second))
	}
}
