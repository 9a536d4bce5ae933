// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTopLiveCost measures live mode over a recording of 1,000 active threads at 10 Hz (a
// writer in this process appends each tick to the current hour, which already holds
// three minutes of them): top's CPU time over 30 s of refreshes, as a share of one CPU,
// and its resident memory. A measurement, not a check: it runs only with
// THREADCAP_TOP_COST=1 (BENCHMARKS.md).
func TestTopLiveCost(t *testing.T) {
	if os.Getenv("THREADCAP_TOP_COST") != "1" {
		t.Skip("a measurement: THREADCAP_TOP_COST=1 runs it")
	}
	const threads, hz = 1000, 10
	workloads := make([]workload, threads)
	for i := range workloads {
		w := knownWorkloads[i%len(knownWorkloads)]
		w.pid, w.tid = int32(1000+i%20), int32(5000+i)
		w.process = fmt.Sprintf("%s-%d", w.process, i%20)
		workloads[i] = w
	}
	dir := filepath.Join(t.TempDir(), "data")
	now := time.Now()
	if now.Sub(now.Truncate(time.Hour)) < 4*time.Minute {
		t.Skip("less than 4 minutes into the hour: the three minutes written before would span two files")
	}
	r := newRecorder(t, dir, time.Now)
	i := 0
	for tick := now.Add(-3 * time.Minute).Truncate(time.Second / hz); tick.Before(now); tick = tick.Add(time.Second / hz) {
		r.write(t, tick, i, workloads)
		i++
	}
	r.w.Close()
	live := recordLive(t, dir, time.Now)
	live.mu.Lock()
	live.workloads = workloads
	live.mu.Unlock()

	term := newTerminal(t, 120, 40)
	term.run(topCommandLine(t, 0, "--dir", dir, "--by", "process,state"))
	term.waitWithin("the live view", time.Minute, func(s string) bool { return strings.Contains(s, "LIVE") && strings.Contains(s, "spinner-0") })
	pid := topPid(t, term)
	time.Sleep(5 * time.Second)
	cpu0, at := cpuTicks(t, pid), time.Now()
	time.Sleep(30 * time.Second)
	cpu := cpuTicks(t, pid) - cpu0
	elapsed := time.Since(at)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var rss string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			rss += strings.Join(strings.Fields(l), " ") + "; "
		}
	}
	t.Logf("top live over %d threads at %d Hz: %.4f of a CPU over %v (%d clock ticks); %s",
		threads, hz, float64(cpu)/100/elapsed.Seconds(), elapsed.Round(time.Millisecond), cpu, rss)
	t.Logf("screen:\n%s", term.screen())
	quit(t, term)
}

// topPid is the process top runs as: the pane's shell's child.
func topPid(t *testing.T, term *terminal) int {
	t.Helper()
	shell := strings.TrimSpace(term.tmux("display-message", "-p", "#{pane_pid}"))
	children, err := os.ReadFile(fmt.Sprintf("/proc/%s/task/%s/children", shell, shell))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(children))
	if len(f) != 1 {
		t.Fatalf("the shell %s has children %q, want top alone", shell, f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// cpuTicks is the user and system time of process pid, in clock ticks (1/100 s).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}
