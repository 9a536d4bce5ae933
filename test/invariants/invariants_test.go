// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"context"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/pgtest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

const (
	// recordFor is how long the workloads run beside the daemon.
	recordFor = 16 * time.Second
	// patience bounds waits that only a broken build or machine makes long.
	patience = time.Minute
)

// TestWholeMachine records every thread on the machine at 10 Hz while a real PostgreSQL
// serves pgbench, a parallel `go build -a` forks and execs its compilers, and more
// spinners than CPUs compete beside sleepers and a blocked pipe reader, then checks every
// row against the invariants, and every thread alive throughout against schedstat.
func TestWholeMachine(t *testing.T) { wholeMachine(t, "full", 0) }

// TestWholeMachineTickMode is TestWholeMachine in the hook-free mode, where a task
// iterator reads every thread at each tick and nothing runs at a switch or a syscall.
func TestWholeMachineTickMode(t *testing.T) { wholeMachine(t, "tick", 0) }

// TestWholeMachineTickModeStalled is TestWholeMachineTickMode with the daemon stopped
// (SIGSTOP) for 300 ms every 1.5 s, as a disk or a hypervisor can hold it: the ticks it
// misses are skipped, and the first one after has the CPU time of all of them to show.
// It once showed more than the CPUs had: a thread's counts, read after the tick, held more
// than its own interval, which its earlier rows gave back.
func TestWholeMachineTickModeStalled(t *testing.T) { wholeMachine(t, "tick", 300*time.Millisecond) }

// wholeMachine records the whole machine under load with the daemon in the syscalls mode
// given, stopped for stall every 1.5 s when stall is not 0, and checks every row.
func wholeMachine(t *testing.T, syscalls string, stall time.Duration) {
	privileged.Require(t)
	pg := pgtest.Start(t)
	if out, err := pg.Pgbench("-i", "-q", "-s", "5").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := machine{cpus: onlineCPUs(t), hookFree: syscalls == "tick"}

	dir := t.TempDir()
	daemon := daemontest.Start(t, bin, patience, "--config", "", "--hz", "10", "--all", "--syscalls", syscalls, "--dir", dir, "--log-level", "info")
	m.daemon = daemon.Cmd.Process.Pid

	spinners := m.cpus + 2
	// A spinner holds a P of the Go scheduler while it runs: with as many Ps as CPUs, the
	// schedstat reader would wait for the runtime to preempt one (10 ms and more), whatever
	// its priority. With a P for every busy goroutine and more, the kernel alone decides.
	procs := runtime.GOMAXPROCS(2*spinners + m.cpus)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	for range spinners {
		workload.Spinner(t)
	}
	workload.Sleeper(t)
	workload.Sleeper(t)
	workload.PipeReader(t)
	ctx, stopBuilds := context.WithCancel(context.Background())
	t.Cleanup(stopBuilds)
	builds := buildChurn(ctx, t)
	bench := pg.Pgbench("-c", "8", "-j", "2", "-T", strconv.Itoa(int(recordFor/time.Second)))
	benchOut := &daemontest.SyncBuffer{}
	bench.Stdout, bench.Stderr = benchOut, benchOut
	workload.Process(t, bench)

	// Schedstat at every whole second from a second in, when every workload runs; the
	// first and last of them that are ticks the daemon took bound the comparison. In the
	// hook-free mode also a tick (100 ms) after each (cpuSnapshot.next).
	begin := time.Now()
	stealBefore, forksBefore := workload.StealUs(t), forks(t)
	var instants []time.Time
	for s := begin.Truncate(time.Second).Add(2 * time.Second); s.Before(begin.Add(recordFor)); s = s.Add(time.Second) {
		instants = append(instants, s)
		if m.hookFree {
			instants = append(instants, s.Add(100*time.Millisecond))
		}
	}
	stopStalls := stallEvery(daemon.Cmd.Process, 1500*time.Millisecond, stall)
	var snaps []cpuSnapshot
	next := map[int64]*cpuSnapshot{} // by the instant (Unix µs) they follow
	for _, snap := range snapshotsAt(instants) {
		if snap.at.Equal(snap.at.Truncate(time.Second)) {
			snaps = append(snaps, snap)
		} else {
			next[snap.at.Add(-100*time.Millisecond).UnixMicro()] = &snap
		}
	}
	for i := range snaps {
		snaps[i].next = next[snaps[i].at.UnixMicro()]
	}
	stopStalls()
	m.hidden = hiddenFromIterators(t)
	steal, forked := workload.StealUs(t)-stealBefore, forks(t)-forksBefore

	daemon.Stop(t)
	stopBuilds()
	built, buildErr := builds()
	if buildErr != nil {
		t.Error(buildErr)
	}
	if err := bench.Wait(); err != nil {
		t.Errorf("pgbench: %v\n%s", err, benchOut)
	}
	t.Logf("beside the daemon: %d processes and threads forked, %d complete go builds, pgbench %s; %v stolen by the hypervisor",
		forked, built, tps(benchOut.String()), time.Duration(steal)*time.Microsecond)
	if log := strings.TrimSpace(daemon.Log.String()); log != "" {
		t.Logf("threadcap's log:\n%s", log)
	}

	rec, err := readRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix := newIndex(rec)
	var t1, t2 *cpuSnapshot
	for i := range snaps {
		if ix.taken[snaps[i].at.UnixMicro()] {
			if t1 == nil {
				t1 = &snaps[i]
			}
			t2 = &snaps[i]
		}
	}
	if t1 == nil || t1 == t2 {
		t.Fatalf("the daemon took fewer than two of the ticks schedstat was read at (%d read, %d ticks taken)", len(snaps), len(rec.ticks))
	}

	v := violations{}
	checkCPUsAtTick(ix, m, v)
	busiest, over := checkCPUTimeAtTick(ix, m, v)
	compared, unread := checkSchedstat(ix, m, *t1, *t2, v)
	shareRows, shares := checkStateShares(ix, v)
	checkTimesAddUp(ix, v)
	t.Logf("%d rows at %d ticks (%d CPUs); %d threads compared with schedstat over (%s, %s], read at most %v and %v late; "+
		"the busiest tick's on_cpu_us (but the %d threads hidden from iterators) %.4f of CPUs × interval, %d ticks above 1; "+
		"%d rows cover a whole interval: %s",
		len(rec.rows), len(rec.ticks), m.cpus, compared, at(t1.at.UnixMicro()), at(t2.at.UnixMicro()),
		t1.latest.Round(time.Microsecond), t2.latest.Round(time.Microsecond), len(m.hidden), busiest, over, shareRows, shares)
	if syscalls == "tick" {
		// On-CPU threads are those of the pass's first instant (one read of each CPU);
		// the other threads' states and counts are read over the pass.
		t.Logf("the task iterator's longest pass read threads over %s; %d threads the kernel gives no task iterator, "+
			"%d of them alive throughout, with no row, not compared: %s",
			longestPass(t, daemon.Log.String()), len(m.hidden), len(unread), strings.Join(unread, ", "))
	}
	if len(v) > 0 {
		t.Errorf("invariants broken over the recording in %s:\n%s", dir, v.summary())
	}
}

// longestPass is the longest_pass_us of the daemon's stop line, as a duration.
func longestPass(t *testing.T, log string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`longest_pass_us=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("threadcap's stop line has no longest_pass_us:\n%s", log)
	}
	us, _ := strconv.Atoi(m[1])
	return time.Duration(us) * time.Microsecond
}

// onlineCPUs counts the CPUs in /sys/devices/system/cpu/online ("0-3,6").
func onlineCPUs(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("/sys/devices/system/cpu/online: %q", b)
		}
		n += last - first + 1
	}
	return n
}

// forks is how many processes and threads the machine has created since it booted.
func forks(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "processes "); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				t.Fatalf("/proc/stat: %q", line)
			}
			return v
		}
	}
	t.Fatal("/proc/stat has no processes line")
	return 0
}

// tps is pgbench's transactions-per-second line.
func tps(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "tps") {
			return line
		}
	}
	return "printed no tps"
}

// stallEvery stops p for stall every period until the function it returns is called
// (which waits for p to run again); with stall 0 it does nothing.
func stallEvery(p *os.Process, period, stall time.Duration) (stop func()) {
	if stall == 0 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(period - stall):
			}
			p.Signal(syscall.SIGSTOP)
			time.Sleep(stall)
			p.Signal(syscall.SIGCONT)
		}
	}()
	return func() { close(done); <-stopped }
}
