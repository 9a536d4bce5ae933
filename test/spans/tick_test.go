// SPDX-License-Identifier: Apache-2.0

package spans

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/workload"
)

// backendCmdline starts the command line of a backend serving the tests' clients.
const backendCmdline = "postgres: postgres postgres 127.0.0.1"

// sampleRow is the columns of a samples row these tests read.
type sampleRow struct {
	tick             int64 // Unix µs
	pid, tid         int64
	state, span, arg string
	cmdline          string
	recordedUs       int64 // the row's interval: its time columns' sum
	timed            bool  // every time column has a value
}

func sampleRows(t *testing.T, dir string) []sampleRow {
	t.Helper()
	var out []sampleRow
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Samples) {
		at, err := time.Parse(time.RFC3339Nano, r["sample_time"])
		if err != nil {
			t.Fatal(err)
		}
		s := sampleRow{tick: at.UnixMicro(), pid: atoi(t, r["pid"]), tid: atoi(t, r["tid"]), state: r["state"],
			span: r["span"], arg: r["span_arg"], cmdline: r["cmdline"], timed: true}
		for _, c := range []string{"on_cpu_us", "runnable_us", "sleeping_us", "uninterruptible_us", "stopped_us"} {
			if r[c] == "" || r[c] == "-1" {
				s.timed = false
				continue
			}
			s.recordedUs += atoi(t, r[c])
		}
		out = append(out, s)
	}
	return out
}

// tickTimes are the ticks the daemon took, Unix µs, from its ticks files.
func tickTimes(t *testing.T, dir string) []int64 {
	t.Helper()
	var out []int64
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Ticks) {
		at, err := time.Parse(time.RFC3339Nano, r["sample_time"])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, at.UnixMicro())
	}
	return out
}

// spanWallUs sums the spans file's wall_us of span.
func spanWallUs(t *testing.T, dir, span string) int64 {
	t.Helper()
	var us int64
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Spans) {
		if r["span"] == span {
			us += atoi(t, r["wall_us"])
		}
	}
	return us
}

// TestShortSpansAtTheTick: spans far shorter than the sampler's read delay show in the rows
// of the ticks they were open at, as often as they were open. A C program's 200 µs span
// in a loop, then pgbench's queries of a fraction of a millisecond: the share of rows in
// the span equals the share of time in it that the spans file gives. Read as of the
// sampler's read, ~25 ms after the tick, no row carried them. In the full mode and in the
// hook-free one, where no hook keeps the records and the spans' parts are the kernel's
// counts.
func TestShortSpansAtTheTick(t *testing.T) {
	for _, mode := range []string{"full", "tick"} {
		t.Run(mode, func(t *testing.T) { shortSpansAtTheTick(t, mode) })
	}
}

func shortSpansAtTheTick(t *testing.T, mode string) {
	r := newRig(t)
	pg, pgBin, work, bin, dir, cfg := r.pg, r.pgBin, r.work, r.bin, r.dir, r.cfg
	// One span each, so that a row's span is the one measured: spanwork's call with its
	// label, and PostgreSQL's queries with their text.
	yaml := fmt.Sprintf(`dir: %s
spans:
  - name: call
    binary: %s
    start: usdt threadcap:work__start
    end: usdt threadcap:work__done
    text_arg: 2
  - name: query
    binary: %s
    start: usdt postgresql:query__start
    end: usdt postgresql:query__done
    text_arg: 1
`, dir, work, filepath.Join(pgBin, "postgres"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// 100 Hz: each share below is measured over about a thousand rows, so that chance
	// moves it by a few hundredths at most.
	d := daemontest.Start(t, bin, time.Minute, "--config", cfg, "--log-level", "warn", "--hz", "100", "--all",
		"--syscalls", mode)

	// 200 µs of CPU in the span, then 200 µs outside it: about half the time in it.
	call := exec.Command(work, "20000", "200us", "0", "0", "200us")
	if out, err := call.CombinedOutput(); err != nil {
		t.Fatalf("spanwork: %v\n%s", err, out)
	}
	benchFrom := time.Now()
	bench := pg.Pgbench("-n", "-c", "8", "-j", "2", "-T", "10")
	out, err := bench.CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	benchTo := time.Now()
	d.Stop(t)

	rows := sampleRows(t, dir)
	ticks := tickTimes(t, dir)

	// spanwork: single-threaded, so its pid is its tid.
	var workRows, workIn, withArg int
	var workUs int64
	for _, r := range rows {
		if r.pid != int64(call.Process.Pid) || !r.timed {
			continue
		}
		workRows++
		workUs += r.recordedUs
		if r.span == "call" {
			workIn++
			if r.arg == "spanwork call" {
				withArg++
			}
		}
	}
	callUs := spanWallUs(t, dir, "call")
	rowShare, timeShare := float64(workIn)/float64(workRows), float64(callUs)/float64(workUs)
	t.Logf("spanwork: %d of %d rows in its 200 µs span (%.3f); the spans file: %d of %d µs (%.3f)",
		workIn, workRows, rowShare, callUs, workUs, timeShare)
	if workRows < 300 || timeShare < 0.2 || timeShare > 0.8 {
		t.Fatalf("spanwork ran %d rows with %.2f of its time in the span: not the workload meant", workRows, timeShare)
	}
	if math.Abs(rowShare-timeShare) > 0.05 {
		t.Errorf("spanwork's rows in the span: %.3f, want the spans file's %.3f within 0.05", rowShare, timeShare)
	}
	if withArg != workIn {
		t.Errorf("%d of %d rows in the span carry its argument \"spanwork call\"", withArg, workIn)
	}

	// pgbench: the backends' rows. A backend's first rows can still carry the postmaster's
	// command line (it is read again every few seconds), so a backend is a process that
	// showed a backend's command line or ran a query at any of its rows.
	backends := map[int64]bool{}
	for _, r := range rows {
		if strings.HasPrefix(r.cmdline, backendCmdline) || r.span == "query" {
			backends[r.pid] = true
		}
	}
	var pgRows, pgIn, inWindow int
	var pgUs int64
	from, to := benchFrom.UnixMicro(), benchTo.UnixMicro()
	for _, r := range rows {
		if !backends[r.pid] || !r.timed {
			continue
		}
		pgRows++
		pgUs += r.recordedUs
		if r.span == "query" {
			pgIn++
			if r.tick >= from && r.tick < to {
				inWindow++
			}
		}
	}
	queryUs := spanWallUs(t, dir, "query")
	rowShare, timeShare = float64(pgIn)/float64(pgRows), float64(queryUs)/float64(pgUs)
	t.Logf("pgbench -c 8: %d of %d backend rows in a query (%.3f); the spans file: %d of %d µs (%.3f); %s",
		pgIn, pgRows, rowShare, queryUs, pgUs, timeShare, tps(string(out)))
	if pgRows < 1000 || timeShare < 0.1 {
		t.Fatalf("the backends had %d rows with %.2f of their time in queries: not the workload meant", pgRows, timeShare)
	}
	if math.Abs(rowShare-timeShare) > 0.05 {
		t.Errorf("backend rows in a query: %.3f, want the spans file's %.3f within 0.05", rowShare, timeShare)
	}
	// The same time seen both ways: queries' average active threads from the rows, and
	// from the spans file (every query ran inside pgbench's run).
	var windowTicks int
	for _, tick := range ticks {
		if tick >= from && tick < to {
			windowTicks++
		}
	}
	fromRows := float64(inWindow) / float64(windowTicks)
	fromSpans := float64(queryUs) / float64(to-from)
	t.Logf("average threads in a query: %.3f from %d rows at %d ticks, %.3f from the spans file", fromRows, inWindow, windowTicks, fromSpans)
	if math.Abs(fromRows-fromSpans) > 0.05*fromSpans {
		t.Errorf("average threads in a query: %.3f from the rows, %.3f from the spans file: want within 5%%", fromRows, fromSpans)
	}
}

// tps is pgbench's throughput line.
func tps(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "tps") {
			return line
		}
	}
	return "no tps line"
}

// lockPoll is one look at pg_stat_activity: when, and how many backends waited on a Lock.
type lockPoll struct {
	at      int64 // Unix µs, halfway through the query
	waiting int
}

// TestLockPileUpAndSleepingSpans, with the default filter (rows for threads that ran or are
// in a span): backends waiting on a lock inside a query sleep, yet each has a row at every
// tick, span lock_wait, as pg_stat_activity shows them; report ranks the wait first with
// their number as its average; and a span around a 100 ms sleep has a row at every tick
// while the thread sleeps in it and none once it is idle outside it.
func TestLockPileUpAndSleepingSpans(t *testing.T) {
	const waiters = 4
	r := newRig(t)
	pg, pgBin, work, bin, dir, cfg := r.pg, r.pgBin, r.work, r.bin, r.dir, r.cfg
	yaml := fmt.Sprintf("dir: %s\n%s  - preset: postgresql\n    binary: %s\n", dir, workload.SpanWorkSpans(work), filepath.Join(pgBin, "postgres"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, bin, time.Minute, "--config", cfg, "--log-level", "warn", "--hz", "10")

	count := func(sql string) int {
		out, err := pg.Psql(sql).Output()
		if err != nil {
			t.Fatalf("psql -c %q: %v", sql, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("psql -c %q said %q", sql, out)
		}
		return n
	}
	holder := pg.Psql("BEGIN; LOCK TABLE pgbench_branches IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	for count("SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND granted AND relation = 'pgbench_branches'::regclass") == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	var clients sync.WaitGroup
	for range waiters {
		c := pg.Psql("SELECT count(*) FROM pgbench_branches")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		clients.Add(1)
		go func() { defer clients.Done(); c.Wait() }()
	}
	var polls []lockPoll
	var pids []int64
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
poll:
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the lock holder: %v", err)
			}
			break poll
		default:
		}
		before := time.Now()
		out, err := pg.Psql("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Output()
		if err != nil {
			t.Fatalf("polling pg_stat_activity: %v", err)
		}
		fields := strings.Fields(string(out))
		polls = append(polls, lockPoll{at: before.Add(time.Since(before) / 2).UnixMicro(), waiting: len(fields)})
		if len(fields) == waiters && pids == nil {
			for _, f := range fields {
				n, _ := strconv.ParseInt(f, 10, 64)
				pids = append(pids, n)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	clients.Wait()

	// A 100 ms sleep inside spanwork's spans, 20 times, then 1.5 s idle outside them.
	sleeper := exec.Command(work, "20", "0", "100", "1500")
	var stderr strings.Builder
	sleeper.Stderr = &stderr
	if err := sleeper.Run(); err != nil {
		t.Fatalf("spanwork: %v\n%s", err, stderr.String())
	}
	sleepTo := time.Now()
	d.Stop(t)

	if pids == nil {
		t.Fatalf("pg_stat_activity never showed the %d waiters: %v", waiters, polls)
	}
	rows := sampleRows(t, dir)
	ticks := tickTimes(t, dir)

	// The window: from the first poll that saw every waiter to the last, less a tick.
	var winFrom, winTo int64
	for _, p := range polls {
		if p.waiting == waiters {
			if winFrom == 0 {
				winFrom = p.at
			}
			winTo = p.at
		}
	}
	winFrom, winTo = winFrom+100_000, winTo-100_000
	if winTo-winFrom < 2_000_000 {
		t.Fatalf("the waiters were all seen waiting for only %v: %v", time.Duration(winTo-winFrom)*time.Microsecond, polls)
	}
	lockRows := map[int64]int{} // tick: rows in lock_wait
	for _, r := range rows {
		if r.span != "lock_wait" {
			continue
		}
		lockRows[r.tick]++
		if r.tick >= winFrom && r.tick <= winTo && r.state != "sleeping" {
			t.Errorf("backend %d in lock_wait at %s is %s, want sleeping", r.pid, time.UnixMicro(r.tick).Format(time.StampMicro), r.state)
		}
	}
	rowAt := map[[2]int64]bool{}
	for _, r := range rows {
		if r.span == "lock_wait" {
			rowAt[[2]int64{r.pid, r.tick}] = true
		}
	}
	var windowTicks, missing int
	var ours, theirs float64
	for _, tick := range ticks {
		if tick < winFrom || tick > winTo {
			continue
		}
		windowTicks++
		for _, pid := range pids {
			if !rowAt[[2]int64{pid, tick}] {
				missing++
				if missing <= 5 {
					t.Errorf("waiting backend %d has no lock_wait row at %s", pid, time.UnixMicro(tick).Format(time.StampMicro))
				}
			}
		}
		// pg_stat_activity's nearest look.
		near := polls[0]
		for _, p := range polls {
			if abs(p.at-tick) < abs(near.at-tick) {
				near = p
			}
		}
		ours += float64(lockRows[tick])
		theirs += float64(near.waiting)
		if off := lockRows[tick] - near.waiting; off > 1 || off < -1 {
			t.Errorf("at %s: %d rows in lock_wait, pg_stat_activity %d waiting", time.UnixMicro(tick).Format(time.StampMicro), lockRows[tick], near.waiting)
		}
	}
	t.Logf("%d ticks while %d clients waited: threadcap %.2f in lock_wait on average, pg_stat_activity %.2f waiting on a Lock",
		windowTicks, waiters, ours/float64(windowTicks), theirs/float64(windowTicks))
	if math.Abs(ours-theirs) > 0.1*theirs {
		t.Errorf("threadcap's average in lock_wait %.2f, pg_stat_activity's %.2f: want within 10%%", ours/float64(windowTicks), theirs/float64(windowTicks))
	}

	// report --by span,state over the window ranks the wait first, with the waiters.
	rep, err := exec.Command(bin, "report", "--config", "", "--dir", dir, "--by", "span,state", "--format", "json",
		"--from", time.UnixMicro(winFrom).Format(time.RFC3339Nano), "--to", time.UnixMicro(winTo).Format(time.RFC3339Nano)).Output()
	if err != nil {
		t.Fatalf("threadcap report: %v", err)
	}
	var res struct {
		Groups []struct {
			Values     map[string]string `json:"values"`
			AvgThreads float64           `json:"avg_threads"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(rep, &res); err != nil {
		t.Fatalf("report's JSON: %v\n%s", err, rep)
	}
	if len(res.Groups) == 0 || res.Groups[0].Values["span"] != "lock_wait" || res.Groups[0].Values["state"] != "sleeping" ||
		math.Abs(res.Groups[0].AvgThreads-waiters) > 0.5 {
		t.Errorf("report --by span,state over the pile-up: %s\nwant lock_wait, sleeping first with %d ± 0.5 threads", rep, waiters)
	}

	// The sleeping span: a row at every tick while spanwork sleeps in it, none once idle.
	said := map[string]int64{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			said[f[0]], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	calls, idle := said["calls"], said["idle"]
	if calls == 0 || idle == 0 {
		t.Fatalf("spanwork said %q, want its calls' and its idle time's start", stderr.String())
	}
	spanRows := map[int64]string{}
	for _, r := range rows {
		if r.pid == int64(sleeper.Process.Pid) {
			spanRows[r.tick] = r.span
		}
	}
	var inSpan, idleTicks int
	for _, tick := range ticks {
		switch {
		case tick > calls+20_000 && tick < idle-20_000:
			inSpan++
			if s, ok := spanRows[tick]; !ok || s == "" {
				t.Errorf("spanwork asleep in its span at %s: row %v, span %q; want a row in the span",
					time.UnixMicro(tick).Format(time.StampMicro), ok, s)
			}
		case tick > idle+250_000 && tick < sleepTo.UnixMicro()-150_000:
			idleTicks++
			if s, ok := spanRows[tick]; ok {
				t.Errorf("spanwork idle outside its spans at %s has a row (span %q); want none", time.UnixMicro(tick).Format(time.StampMicro), s)
			}
		}
	}
	if inSpan < 10 || idleTicks < 5 {
		t.Errorf("only %d ticks in spanwork's sleeping spans and %d while idle: the test saw too little", inSpan, idleTicks)
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
