// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestAverageActiveThreads records a quiet machine with --all (a row for every thread at
// every tick) beside 2 spinners and 20 sleepers: report's average active threads must be
// what the kernel shows at the ticks, the threads running, waiting for a CPU or in D
// (/proc's R and D), not the number of threads with rows.
func TestAverageActiveThreads(t *testing.T) {
	privileged.Require(t)
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Spinners of their own processes: a spinner thread of this one would give up its CPU
	// whenever the Go runtime preempts it to run the reader of /proc below, so the kernel's
	// view would see the reading, not the recording.
	for range 2 {
		workload.SpinnerProcess(t)
	}
	for range 20 {
		workload.Sleeper(t)
	}
	dir := t.TempDir()
	daemon := daemontest.Start(t, bin, patience, "--config", "", "--hz", "10", "--all", "--dir", dir, "--log-level", "warn")

	// The kernel's view 5 ms after each tick of 8 s: every thread in R or D but this
	// process's, which reads it (its sleepers are never either).
	self := os.Getpid()
	first := time.Now().Truncate(100 * time.Millisecond).Add(time.Second)
	counts := map[int64]int{} // by tick, Unix µs
	tick := first
	for range 80 {
		time.Sleep(time.Until(tick.Add(5 * time.Millisecond)))
		counts[tick.UnixMicro()] = activeNow(t, self)
		tick = tick.Add(100 * time.Millisecond)
	}
	last := tick.Add(-100 * time.Millisecond)
	time.Sleep(time.Second)
	daemon.Stop(t)
	// The kernel's view at the ticks the daemon took (a tick that waited too long for a
	// CPU is skipped, and not in report's average either).
	rec, err := readRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	var kernel float64
	var taken int64
	for _, tick := range rec.ticks {
		if n, ok := counts[tick]; ok {
			kernel += float64(n)
			taken++
		}
	}
	if taken < int64(len(counts))*9/10 {
		t.Fatalf("the daemon took %d of the %d ticks the kernel was read at", taken, len(counts))
	}
	kernel /= float64(taken)

	out, err := exec.Command(bin, "report", "--config", "", "--dir", dir, "--format", "json",
		"--from", first.Format(time.RFC3339Nano), "--to", last.Add(time.Millisecond).Format(time.RFC3339Nano)).Output()
	if err != nil {
		t.Fatalf("threadcap report: %v", err)
	}
	var res struct {
		Ticks        int64   `json:"ticks"`
		Rows         int64   `json:"rows"`
		InactiveRows int64   `json:"inactive_rows"`
		AvgThreads   float64 `json:"avg_threads"`
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&res); err != nil {
		t.Fatalf("report's JSON: %v\n%s", err, out)
	}
	t.Logf("%d ticks: report %.3f active threads (%d active rows, %d inactive); the kernel %.3f threads in R or D",
		res.Ticks, res.AvgThreads, res.Rows, res.InactiveRows, kernel)
	if res.Ticks != taken {
		t.Errorf("report counted %d ticks in the window, the ticks file %d", res.Ticks, taken)
	}
	if res.InactiveRows < 20*res.Ticks {
		t.Errorf("%d inactive rows at %d ticks: --all should give every sleeper one", res.InactiveRows, res.Ticks)
	}
	if math.Abs(res.AvgThreads-kernel) > 0.1 {
		t.Errorf("average active threads %.3f, the kernel showed %.3f: want within 0.1", res.AvgThreads, kernel)
	}
}

// activeNow counts the threads of the machine in R or D, but for those of process self.
func activeNow(t *testing.T, self int) int {
	t.Helper()
	own := "/proc/" + strconv.Itoa(self) + "/"
	stats, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range stats {
		if strings.HasPrefix(path, own) {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited since the glob
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		// /proc/PID/task/TID/stat: the state follows the name in parentheses.
		if st := b[i+2]; st == 'R' || st == 'D' {
			n++
		}
	}
	return n
}
