// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// (/proc's R and D), not the number of threads with rows. The observers, the daemon and
// this process, are left out of both views: the kernel's is read ms after a tick, while
// the daemon is still busy with it and this process reads, which the rows as of the tick
// never see.
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

	// The kernel's view 5 ms after each tick of 8 s: every thread in R or D but the
	// observers'.
	observers := []int{os.Getpid(), daemon.Cmd.Process.Pid}
	first := time.Now().Truncate(100 * time.Millisecond).Add(time.Second)
	counts := map[int64]map[string]int{} // by tick (Unix µs), by pid
	tick := first
	for range 80 {
		time.Sleep(time.Until(tick.Add(5 * time.Millisecond)))
		counts[tick.UnixMicro()] = activeNow(t, observers)
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
	kernelByPid := map[string]float64{}
	for _, tick := range rec.ticks {
		if byPid, ok := counts[tick]; ok {
			for pid, n := range byPid {
				kernel += float64(n)
				kernelByPid[pid] += float64(n)
			}
			taken++
		}
	}
	if taken < int64(len(counts))*9/10 {
		t.Fatalf("the daemon took %d of the %d ticks the kernel was read at", taken, len(counts))
	}
	kernel /= float64(taken)
	for pid := range kernelByPid {
		kernelByPid[pid] /= float64(taken)
	}

	out, err := exec.Command(bin, "report", "--config", "", "--dir", dir, "--format", "json", "--by", "pid", "--top", "0",
		"--from", first.Format(time.RFC3339Nano), "--to", last.Add(time.Millisecond).Format(time.RFC3339Nano)).Output()
	if err != nil {
		t.Fatalf("threadcap report: %v", err)
	}
	var res struct {
		Ticks        int64   `json:"ticks"`
		Rows         int64   `json:"rows"`
		InactiveRows int64   `json:"inactive_rows"`
		AvgThreads   float64 `json:"avg_threads"`
		Groups       []struct {
			Values     map[string]string `json:"values"`
			AvgThreads float64           `json:"avg_threads"`
		} `json:"groups"`
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&res); err != nil {
		t.Fatalf("report's JSON: %v\n%s", err, out)
	}
	// The whole machine's average but the observers'.
	observed := res.AvgThreads
	reportByPid := map[string]float64{}
	for _, g := range res.Groups {
		if slices.ContainsFunc(observers, func(pid int) bool { return g.Values["pid"] == strconv.Itoa(pid) }) {
			observed -= g.AvgThreads
			t.Logf("observer %s: %.3f threads active at the ticks", g.Values["pid"], g.AvgThreads)
			continue
		}
		reportByPid[g.Values["pid"]] = g.AvgThreads
	}
	t.Logf("%d ticks: report %.3f active threads (%d active rows, %d inactive), %.3f but the observers'; the kernel %.3f threads in R or D",
		res.Ticks, res.AvgThreads, res.Rows, res.InactiveRows, observed, kernel)
	if res.Ticks != taken {
		t.Errorf("report counted %d ticks in the window, the ticks file %d", res.Ticks, taken)
	}
	if res.InactiveRows < 20*res.Ticks {
		t.Errorf("%d inactive rows at %d ticks: --all should give every sleeper one", res.InactiveRows, res.Ticks)
	}
	if math.Abs(observed-kernel) > 0.1 {
		t.Errorf("average active threads but the observers' %.3f, the kernel showed %.3f: want within 0.1", observed, kernel)
		for pid := range mergedKeys(reportByPid, kernelByPid) {
			if math.Abs(reportByPid[pid]-kernelByPid[pid]) >= 0.02 {
				t.Logf("pid %s: report %.3f, the kernel %.3f", pid, reportByPid[pid], kernelByPid[pid])
			}
		}
	}
}

// activeNow counts the threads of the machine in R or D by process, but for those of the
// processes left out.
func activeNow(t *testing.T, leftOut []int) map[string]int {
	t.Helper()
	var own []string
	for _, pid := range leftOut {
		own = append(own, "/proc/"+strconv.Itoa(pid)+"/")
	}
	stats, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, path := range stats {
		if slices.ContainsFunc(own, func(p string) bool { return strings.HasPrefix(path, p) }) {
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
			n[strings.Split(path, "/")[2]]++
		}
	}
	return n
}

// mergedKeys is the set of the keys of a and b.
func mergedKeys(a, b map[string]float64) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
