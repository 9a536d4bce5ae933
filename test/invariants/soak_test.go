// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// soakFor is how long each soak records: minutes, since a race that tears a record for good
// showed after one minute and not in seconds. THREADCAP_SOAK (a Go duration) makes it
// longer: BENCHMARKS.md's hours are `make soak`.
func soakFor(t *testing.T) time.Duration {
	d := 3 * time.Minute
	if v := os.Getenv("THREADCAP_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("THREADCAP_SOAK=%q: %v; give a duration such as 1h", v, err)
		}
	}
	return d
}

// TestSoak runs the daemon at 10 Hz with --all for minutes. First, for half the time, the
// quiet machine of the 29-minute run in which records tore for good: 200 threads that wake
// once a second and 4 that run 20 ms a second; there every tick must be taken. Then the
// same beside thread churn, a syscall storm, a context-switch storm (ping-pong), timers
// firing every millisecond (wakeups in hard interrupt context), a spinner and short-lived
// processes that open spans (as a database's backends come and go with its connections),
// with the unseen switches these kernels make: a tick may then wait for a CPU (at most 1%
// of them skipped). Throughout, no record may be read torn or left claimed, every thread
// alive through a phase has a row at every tick of it, and every span is counted.
func TestSoak(t *testing.T) { soak(t, "full") }

// TestSoakHookFree is TestSoak in the hook-free mode (syscalls tick), where the pass at
// each tick, not hooks, keeps the records, and a thread's exit forgets its spans.
func TestSoakHookFree(t *testing.T) { soak(t, "tick") }

// spanCalls is how many calls, each a span, a short-lived process of the soak makes.
const spanCalls = 5

func soak(t *testing.T, mode string) {
	privileged.Require(t)
	length := soakFor(t)
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spanwork := workload.SpanWork(t)
	config := filepath.Join(t.TempDir(), "threadcap.yaml")
	if err := os.WriteFile(config, []byte(workload.SpanWorkSpans(spanwork)), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(32)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })

	var quiet, stormy []int
	for range 200 {
		quiet = append(quiet, workload.Sleeper(t).Tid)
	}
	for range 4 {
		quiet = append(quiet, workload.Burster(t, 20*time.Millisecond, time.Second).Tid)
	}

	dir := t.TempDir()
	daemon := daemontest.Start(t, bin, patience, "--config", config, "--syscalls", mode, "--hz", "10", "--all",
		"--dir", dir, "--log-level", "info")
	began := time.Now()
	time.Sleep(length / 2)

	stormsFrom := time.Now()
	stormy = append(stormy, workload.Spinner(t).Tid, workload.SyscallStorm(t).Tid)
	a, b := workload.PingPong(t)
	stormy = append(stormy, a.Tid, b.Tid)
	for range 4 {
		stormy = append(stormy, workload.Ticker(t, time.Millisecond).Tid)
	}
	churned, spanned := 0, 0
	for time.Since(began) < length {
		churned += len(workload.ShortThreads(50))
		if out, err := exec.Command(spanwork, strconv.Itoa(spanCalls), "200us", "0").CombinedOutput(); err != nil {
			t.Fatalf("spanwork: %v\n%s", err, out)
		}
		spanned++
		time.Sleep(100 * time.Millisecond)
	}
	ended := time.Now()
	daemon.Stop(t)
	stop := stopLine(t, daemon.Log.String())
	t.Logf("%s mode, %v at 10 Hz beside %d long-lived threads, then %d more, %d short ones and %d processes with spans; the stop line: %v",
		mode, ended.Sub(began).Round(time.Second), len(quiet), len(stormy), churned, spanned, stop)

	for _, field := range []string{"span_starts_lost", "span_ends_missed", "span_ends_unmatched"} {
		if stop[field] != 0 {
			t.Errorf("the stop line says %s=%d, want 0", field, stop[field])
		}
	}
	if mode == "tick" && (stop["stack_rows"] != 0 || stop["stackless_rows"] != 0) {
		t.Errorf("the stop line says stack_rows=%d stackless_rows=%d; the hook-free mode captures no stacks, so no row is to have one",
			stop["stack_rows"], stop["stackless_rows"])
	}
	spans := map[string]int{}
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Spans) {
		n, err := strconv.Atoi(r["count"])
		if err != nil {
			t.Fatalf("spans file row %v: count %q", r, r["count"])
		}
		spans[r["span"]] += n
	}
	if want := spanned * spanCalls; spans["call"] != want || spans["work"] != want {
		t.Errorf("the spans files count %d call and %d work spans; %d processes made %d of each", spans["call"], spans["work"], spanned, want)
	}

	rec, err := readRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ticks per minute %v", perMinute(rec.ticks))
	for _, field := range []string{"torn_reads", "recovered_records"} {
		if stop[field] != 0 {
			t.Errorf("the stop line says %s=%d, want 0", field, stop[field])
		}
	}
	// The first tick is taken at the start, off the grid: the phases begin a second in.
	quietGaps, quietTicks := gaps(rec.ticks, began.Add(time.Second), stormsFrom)
	stormGaps, stormTicks := gaps(rec.ticks, stormsFrom, ended)
	t.Logf("quiet: %d ticks skipped of %d; storms: %d of %d; write conflicts %d, unseen switches %d",
		quietGaps, quietTicks, stormGaps, stormTicks, stop["write_conflicts"], stop["unseen_switches"])
	if quietGaps > 0 {
		t.Errorf("%d ticks skipped on the quiet machine, want none", quietGaps)
	}
	if stormGaps*100 > stormTicks {
		t.Errorf("%d ticks of %d skipped beside the storms, want at most 1%%", stormGaps, stormTicks)
	}

	rowsOf := map[int]map[int64]bool{}
	for _, r := range rec.rows {
		if rowsOf[r.tid] == nil {
			rowsOf[r.tid] = map[int64]bool{}
		}
		rowsOf[r.tid][r.tick] = true
	}
	missing := everyTick(t, rec.ticks, rowsOf, append(quiet, stormy...), stormsFrom.Add(time.Second), ended.Add(-time.Second))
	missing += everyTick(t, rec.ticks, rowsOf, quiet, began.Add(time.Second), stormsFrom)
	if missing > 0 {
		t.Errorf("%d rows missing of threads alive throughout", missing)
	}
}

// gaps counts the ticks skipped between from and to, and the ticks that should be there.
func gaps(ticks []int64, from, to time.Time) (skipped, want int) {
	lo, hi := from.UnixMicro(), to.UnixMicro()
	prev := int64(0)
	for _, tick := range ticks {
		if tick < lo || tick > hi {
			continue
		}
		if prev != 0 {
			skipped += int((tick-prev)/100_000) - 1
		}
		prev = tick
	}
	return skipped, int((hi - lo) / 100_000)
}

// everyTick counts (and names the first few of) the ticks between from and to at which a
// thread of tids has no row.
func everyTick(t *testing.T, ticks []int64, rowsOf map[int]map[int64]bool, tids []int, from, to time.Time) int {
	t.Helper()
	missing := 0
	for _, tick := range ticks {
		if tick < from.UnixMicro() || tick > to.UnixMicro() {
			continue
		}
		for _, tid := range tids {
			if !rowsOf[tid][tick] {
				missing++
				if missing <= 10 {
					t.Errorf("thread %d has no row at %s", tid, at(tick))
				}
			}
		}
	}
	return missing
}

// stopLine reads the numbers of threadcap's "stopped" log line.
func stopLine(t *testing.T, log string) map[string]int64 {
	t.Helper()
	line := regexp.MustCompile(`(?m)^.*msg=stopped.*$`).FindString(log)
	if line == "" {
		t.Fatalf("threadcap logged no stop line:\n%s", log)
	}
	out := map[string]int64{}
	for _, m := range regexp.MustCompile(`(\w+)=(\d+)\b`).FindAllStringSubmatch(line, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		out[m[1]] = n
	}
	return out
}

// perMinute counts ticks by wall-clock minute, in order.
func perMinute(ticks []int64) []int {
	var counts []int
	var minute int64 = -1
	for _, tick := range ticks {
		if m := tick / 60_000_000; m != minute {
			minute = m
			counts = append(counts, 0)
		}
		counts[len(counts)-1]++
	}
	return counts
}
