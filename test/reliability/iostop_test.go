// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/blockdev"
)

// TestIOMinuteAtStopAndRestart stops threadcap with SIGTERM in the middle of a minute,
// after known O_DIRECT reads of a loop device only this test uses, starts it again within
// the same minute, reads again and stops it again: the io file has two lines for the
// minute, each with the read requests /sys/block/DEV/stat counted while that run was up
// (but for the rare completion the kernel hides from its programs: blockdev.CountedAll),
// so that neither part of the minute is lost and their sum is the minute's.
func TestIOMinuteAtStopAndRestart(t *testing.T) {
	loop := blockdev.LoopFile(t, 64<<20)
	const reads = 2000
	for attempt := 1; ; attempt++ {
		dir := filepath.Join(t.TempDir(), "data")
		// Both runs in one minute: start with most of a minute ahead.
		if s := time.Now().Second(); s > 5 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
		minute := time.Now().Truncate(time.Minute)
		args := []string{"--all", "--pid", strconv.Itoa(os.Getpid()), "--dir", dir}
		var deltas []uint64
		for run := range 2 {
			d := startDaemon(t, args...)
			// Rows written: the kernel side is loaded and the first tick taken.
			waitRows(t, dir, samplesSize(dir)+1)
			before := blockdev.ReadStat(t, loop)
			r := blockdev.OpenDirect(t, loop.Path(), 4096)
			for i := range reads {
				if err := r.ReadAt(4096, int64((i*7919+run*3)%16384)*4096); err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			deltas = append(deltas, blockdev.ReadStat(t, loop).Reads-before.Reads)
			d.Stop(t)
		}
		if !time.Now().Truncate(time.Minute).Equal(minute) {
			if attempt == 3 {
				t.Fatalf("three tries did not fit two starts and stops in one minute")
			}
			t.Logf("the minute ended before the second stop; again")
			continue
		}
		lines := ioLines(t, dir, loop.Name)
		var written []string
		for _, l := range lines {
			written = append(written, l.minute.Format("15:04")+" "+strconv.FormatUint(l.requests, 10))
		}
		t.Logf("minute %s: %s read requests by /sys/block stat %v; io file lines %v", minute.Format("15:04"), loop.Name, deltas, written)
		if len(lines) != 2 {
			t.Fatalf("%d io lines for %s, want two: one written at each stop: %v", len(lines), loop.Name, lines)
		}
		for i, l := range lines {
			if !l.minute.Equal(minute) || !blockdev.CountedAll(l.requests, deltas[i]) || deltas[i] < reads {
				t.Errorf("run %d: a line for %s with %d read requests; /sys/block/%s/stat counted %d (%d reads made) in %s",
					i+1, l.minute.Format("15:04"), l.requests, loop.Name, deltas[i], reads, minute.Format("15:04"))
			}
		}
		return
	}
}

// samplesSize is the bytes of the samples files in dir.
func samplesSize(dir string) int64 {
	var size int64
	names, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			size += fi.Size()
		}
	}
	return size
}

// ioLine is one line of an io file.
type ioLine struct {
	minute   time.Time
	requests uint64
}

// ioLines reads the read lines of disk from the io files in dir, in file order.
func ioLines(t *testing.T, dir, disk string) []ioLine {
	t.Helper()
	all, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []ioLine
	for _, f := range hourfile.ForReading(all, hourfile.IO) {
		r, err := hourfile.OpenReader(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range r.Header() {
			col[string(h)] = i
		}
		for {
			fields, ok := r.Next()
			if !ok {
				break
			}
			if string(fields[col["disk"]]) != disk || string(fields[col["op"]]) != "read" {
				continue
			}
			m, err := time.Parse(hourfile.TimeLayout, string(fields[col["minute"]]))
			n, err2 := strconv.ParseUint(string(fields[col["requests"]]), 10, 64)
			if err != nil || err2 != nil {
				t.Fatalf("%s: line %q", f.Path, strings.Join(strings.Fields(string(fields[0])), " "))
			}
			out = append(out, ioLine{m, n})
		}
		if r.Lost() != 0 || r.Tail() != nil {
			t.Errorf("%s: %d lines lost, tail %v", f.Path, r.Lost(), r.Tail())
		}
		r.Close()
	}
	return out
}
