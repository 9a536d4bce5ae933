// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/bpf/usdt"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

func point(t *testing.T, s string) usdt.Point {
	t.Helper()
	p, err := usdt.ParsePoint(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// spanworkProbes are span 0, "call" (USDT, with the call number and label), and span 1,
// "work" (tc_work's entry to its return), nested in it.
func spanworkProbes(t *testing.T, bin string) []SpanProbe {
	t.Helper()
	var probes []SpanProbe
	for id, d := range []SpanDef{
		{Binary: bin, Start: point(t, "usdt threadcap:work__start"), End: point(t, "usdt threadcap:work__done"), IntArg: 1, TextArg: 2},
		{Binary: bin, Start: point(t, "entry tc_work"), End: point(t, "return tc_work")},
	} {
		p, err := d.Probes(uint16(id))
		if err != nil {
			t.Fatal(err)
		}
		probes = append(probes, p...)
	}
	return probes
}

// TestSpansSplitWallTime runs N calls that each spin 5 ms of CPU and sleep 10 ms: both
// spans end exactly N times, their parts add up to their wall time to the nanosecond,
// on-CPU is the spin and sleeping at least the sleep; the semaphore was set. In the full
// mode, where hooks keep the records the probes read, and in the hook-free mode, where
// the probes read the kernel's own counts of the thread.
func TestSpansSplitWallTime(t *testing.T) {
	for _, mode := range []SyscallMode{SyscallsFull, SyscallsTick} {
		t.Run(string(mode), func(t *testing.T) { spansSplitWallTime(t, mode) })
	}
}

func spansSplitWallTime(t *testing.T, mode SyscallMode) {
	privileged.Require(t)
	bin := workload.SpanWork(t)
	tr := openTracker(t, Config{Syscalls: mode, Spans: spanworkProbes(t, bin)})
	const calls = 20
	out, err := exec.Command(bin, strconv.Itoa(calls), "5", "10").Output()
	if err != nil {
		t.Fatalf("spanwork: %v", err)
	}
	if sema, _ := strconv.Atoi(strings.TrimSpace(string(out))); sema < 1 {
		t.Errorf("work__start's semaphore is %q: the uprobe's reference counter did not set it", out)
	}
	stats, err := tr.SpanStats(2)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range stats {
		if s.Count != calls {
			t.Errorf("span %d ended %d times, want %d", id, s.Count, calls)
		}
		var sum, hist, cpuHist uint64
		for _, p := range s.PartNs {
			sum += p
		}
		for b := range SpanBuckets {
			hist += s.WallHist[b]
			cpuHist += s.CPUHist[b]
		}
		if sum != s.WallNs {
			t.Errorf("span %d: parts %v add up to %d ns, wall is %d", id, s.PartNs, sum, s.WallNs)
		}
		if hist != calls || cpuHist != calls {
			t.Errorf("span %d: histograms hold %d and %d spans, want %d", id, hist, cpuHist, calls)
		}
		onCPU := float64(s.PartNs[0]) / calls / 1e6
		if onCPU < 4.75 || onCPU > 6.5 {
			t.Errorf("span %d: %.2f ms on CPU per call, want about 5", id, onCPU)
		}
		if asleep := float64(s.PartNs[2]) / calls / 1e6; asleep < 10 {
			t.Errorf("span %d: %.2f ms sleeping per call, want at least 10", id, asleep)
		}
		// At least 15 ms: bucket 14 (8-16 ms) or above. About 5 ms on CPU: bucket 13 (4-8 ms).
		if lo := slices.IndexFunc(s.WallHist[:], func(n uint64) bool { return n > 0 }); lo < 14 {
			t.Errorf("span %d: wall histogram %v has a call under 8 ms", id, s.WallHist)
		}
		if s.CPUHist[13] != calls {
			t.Errorf("span %d: on-CPU histogram %v, want every call in bucket 13 (4-8 ms)", id, s.CPUHist)
		}
	}
	if c, err := tr.SpanCounters(); err != nil || c != (SpanCounters{}) {
		t.Errorf("span counters %+v (%v), want none", c, err)
	}
}

// TestShortSpansAreOnCPU runs 400 calls that each spin 150 µs and do not sleep, as a
// pgbench query lasts: a span that never slept is on CPU but for its waits for a CPU, in
// either mode, within 5% of the spin on average, and its parts add up to its wall time.
func TestShortSpansAreOnCPU(t *testing.T) {
	for _, mode := range []SyscallMode{SyscallsFull, SyscallsTick} {
		t.Run(string(mode), func(t *testing.T) {
			privileged.Require(t)
			bin := workload.SpanWork(t)
			tr := openTracker(t, Config{Syscalls: mode, Spans: spanworkProbes(t, bin)})
			const calls = 400
			if err := exec.Command(bin, strconv.Itoa(calls), "150us", "0").Run(); err != nil {
				t.Fatalf("spanwork: %v", err)
			}
			stats, err := tr.SpanStats(2)
			if err != nil {
				t.Fatal(err)
			}
			for id, s := range stats {
				var sum uint64
				for _, p := range s.PartNs {
					sum += p
				}
				onCPU := float64(s.PartNs[0]) / calls / 1e3
				t.Logf("span %d: %d calls, %.1f µs on CPU a call, parts %v of %d ns", id, s.Count, onCPU, s.PartNs, s.WallNs)
				if s.Count != calls || sum != s.WallNs {
					t.Errorf("span %d: %d calls, parts %v add up to %d ns of %d", id, s.Count, s.PartNs, sum, s.WallNs)
				}
				if onCPU < 150*0.95 || s.PartNs[2]+s.PartNs[3] > s.WallNs/20 {
					t.Errorf("span %d: %.1f µs on CPU a call, %d ns off CPU; want about 150 µs and nothing off CPU",
						id, onCPU, s.PartNs[2]+s.PartNs[3])
				}
			}
		})
	}
}

// TestOpenSpansAndExitInside reads a thread's open spans while it sleeps in a call (the
// USDT probe's arguments captured, the function's span nested inside), then kills it
// there: its open spans leave nothing behind, in the modes with hooks, where its last
// switch forgets them, and in the hook-free mode, where its exit does.
func TestOpenSpansAndExitInside(t *testing.T) {
	privileged.Require(t)
	bin := workload.SpanWork(t)
	for _, mode := range []SyscallMode{SyscallsFull, SyscallsTick} {
		t.Run(string(mode), func(t *testing.T) {
			tr := openTracker(t, Config{Syscalls: mode, Spans: spanworkProbes(t, bin)})
			cmd := exec.Command(bin, "1", "1", "60000")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			pid := uint32(cmd.Process.Pid)
			var got *SpanThread
			for deadline := time.Now().Add(5 * time.Second); got == nil && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				if err := tr.SpanThreads(0, func(th *SpanThread) {
					if th.Tid == pid && len(th.Frames) == 2 {
						c := *th
						c.Frames = append([]SpanFrame(nil), th.Frames...)
						got = &c
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			if got == nil {
				t.Fatal("spanwork's two open spans never showed")
			}
			call, work := got.Frames[0], got.Frames[1]
			if call.Span != 0 || call.Text != "spanwork call" || call.Int != 0 || work.Span != 1 || work.StartNs < call.StartNs {
				t.Errorf("open spans %+v, want call (0, \"spanwork call\", 0) then work (1) inside it", got.Frames)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				left := 0
				_ = tr.SpanThreads(0, func(th *SpanThread) {
					if th.Tid == pid {
						left++
					}
				})
				if left == 0 {
					if n := spanEntries(t, tr); n != 0 {
						t.Errorf("span_threads holds %d entries after the only thread with spans exited", n)
					}
					stats, _ := tr.SpanStats(2)
					if stats[0].Count != 0 || stats[1].Count != 0 {
						t.Errorf("spans that never ended were counted: %+v", stats)
					}
					return
				}
			}
			t.Error("the killed thread's open spans are still there")
		})
	}
}

// spanEntries counts the threads the kernel side keeps spans for.
func spanEntries(t *testing.T, tr *Tracker) int {
	t.Helper()
	var key uint32
	var v threadcapTcSpanThread
	it := tr.coll.Maps[threadcapMapSpanThreads].Iterate()
	n := 0
	for it.Next(&key, &v) {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestThreadsWithSpansComeAndGo runs, one after another, five times as many short-lived
// processes opening spans as the kernel side has room for threads with spans, as a
// database's backends come and go with its connections: every span of every one is
// kept and counted, and none is left when they are gone, in every mode. (The hook-free
// mode once kept the spans of every thread that had exited: the map was full after the
// first eight, and no span was kept after.)
func TestThreadsWithSpansComeAndGo(t *testing.T) {
	privileged.Require(t)
	bin := workload.SpanWork(t)
	const room, processes, calls = 8, 40, 3
	for _, mode := range []SyscallMode{SyscallsFull, SyscallsPassive, SyscallsTick} {
		t.Run(string(mode), func(t *testing.T) {
			tr := openTracker(t, Config{Syscalls: mode, Spans: spanworkProbes(t, bin), SpanThreads: room})
			for range processes {
				if out, err := exec.Command(bin, strconv.Itoa(calls), "0", "0").CombinedOutput(); err != nil {
					t.Fatalf("spanwork: %v\n%s", err, out)
				}
			}
			c, err := tr.SpanCounters()
			if err != nil {
				t.Fatal(err)
			}
			stats, err := tr.SpanStats(2)
			if err != nil {
				t.Fatal(err)
			}
			if c.NoRoom != 0 || c.Unmatched != 0 || c.MissedEnds != 0 {
				t.Errorf("after %d processes of %d calls, with room for %d threads: %+v; want no loss", processes, calls, room, c)
			}
			for id, s := range stats {
				if s.Count != processes*calls {
					t.Errorf("span %d ended %d times; want %d", id, s.Count, processes*calls)
				}
			}
			if n := spanEntries(t, tr); n != 0 {
				t.Errorf("span_threads holds %d entries after every thread with spans exited", n)
			}
		})
	}
}

// TestSpansUnderCPUStarvation: with more spinners than CPUs beside it, a call waits for a
// CPU too; its parts still add up to its wall time exactly, the spin still counts as on
// CPU, and the wait shows as runnable.
func TestSpansUnderCPUStarvation(t *testing.T) {
	privileged.Require(t)
	bin := workload.SpanWork(t)
	tr := openTracker(t, Config{Spans: spanworkProbes(t, bin)})
	for range runtime.NumCPU() + 1 {
		workload.Spinner(t)
	}
	const calls = 20
	if out, err := exec.Command(bin, strconv.Itoa(calls), "5", "10").CombinedOutput(); err != nil {
		t.Fatalf("spanwork: %v\n%s", err, out)
	}
	stats, err := tr.SpanStats(2)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range stats {
		var sum uint64
		for _, p := range s.PartNs {
			sum += p
		}
		onCPU, runnable := float64(s.PartNs[0])/calls/1e6, float64(s.PartNs[1])/calls/1e6
		t.Logf("span %d: %.2f ms wall, %.2f on CPU, %.2f runnable, %.2f sleeping per call", id,
			float64(s.WallNs)/calls/1e6, onCPU, runnable, float64(s.PartNs[2])/calls/1e6)
		if s.Count != calls || sum != s.WallNs {
			t.Errorf("span %d: %d spans, parts %v adding up to %d ns of %d", id, s.Count, s.PartNs, sum, s.WallNs)
		}
		if onCPU < 4.75 || onCPU > 6.5 || runnable < 1 {
			t.Errorf("span %d: %.2f ms on CPU and %.2f runnable per call, want about 5 and at least 1", id, onCPU, runnable)
		}
	}
}
