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
	"syscall"
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
	for range 2 {
		workload.Spinner(t)
	}
	for range 20 {
		workload.Sleeper(t)
	}
	dir := t.TempDir()
	notify := filepath.Join(t.TempDir(), "notify")
	systemd := daemontest.ListenNotify(t, notify)
	daemonLog := &daemontest.SyncBuffer{}
	daemon := exec.Command(bin, "run", "--config", "", "--hz", "10", "--all", "--dir", dir, "--log-level", "warn")
	daemon.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify)
	daemon.Stdout, daemon.Stderr = daemonLog, daemonLog
	workload.Process(t, daemon)
	if got := daemontest.Receive(t, systemd, patience); got != "READY=1" {
		t.Fatalf("threadcap notified %q first, want READY=1\n%s", got, daemonLog)
	}

	// The kernel's view 5 ms after each tick of 8 s: this thread's own reading aside,
	// every thread in R or D.
	self := syscall.Gettid()
	first := time.Now().Truncate(100 * time.Millisecond).Add(time.Second)
	var counts []int
	tick := first
	for range 80 {
		time.Sleep(time.Until(tick.Add(5 * time.Millisecond)))
		counts = append(counts, activeNow(t, self))
		tick = tick.Add(100 * time.Millisecond)
	}
	last := tick.Add(-100 * time.Millisecond)
	time.Sleep(time.Second)
	daemon.Process.Signal(syscall.SIGTERM)
	if err := daemon.Wait(); err != nil {
		t.Fatalf("threadcap run: %v\n%s", err, daemonLog)
	}
	var kernel float64
	for _, n := range counts {
		kernel += float64(n)
	}
	kernel /= float64(len(counts))

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
	if res.Ticks != int64(len(counts)) {
		t.Errorf("report counted %d ticks in the window, want %d", res.Ticks, len(counts))
	}
	if res.InactiveRows < 20*res.Ticks {
		t.Errorf("%d inactive rows at %d ticks: --all should give every sleeper one", res.InactiveRows, res.Ticks)
	}
	if math.Abs(res.AvgThreads-kernel) > 0.1 {
		t.Errorf("average active threads %.3f, the kernel showed %.3f: want within 0.1", res.AvgThreads, kernel)
	}
}

// activeNow counts the threads of the machine in R or D, but for thread self.
func activeNow(t *testing.T, self int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited since the glob
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		// /proc/PID/task/TID/stat: the state follows the name in parentheses.
		if st := b[i+2]; (st == 'R' || st == 'D') && filepath.Base(filepath.Dir(path)) != strconv.Itoa(self) {
			n++
		}
	}
	return n
}
