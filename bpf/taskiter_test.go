// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// tickRead runs the iteration for a tick at now and returns thread tid's record as of it
// (ok false when it has none), and the tick.
func tickRead(t *testing.T, tr *Tracker, tid int) (state.Thread, uint32, uint64, bool) {
	t.Helper()
	tick := Now()
	if _, err := tr.Iterate(tick); err != nil {
		t.Fatalf("Iterate: %v", err)
	}
	var got state.Thread
	var slot uint32
	var seen bool
	tr.Scan(0, tick, nil, func(s uint32, th *state.Thread) {
		if int(th.Tid) == tid {
			got, slot, seen = *th, s, true
		}
	})
	return got, slot, tick, seen
}

// tickFind iterates until thread tid's record satisfies ok, for 5 s at most.
func tickFind(t *testing.T, tr *Tracker, tid int, ok func(*state.Thread) bool) state.Thread {
	t.Helper()
	var last state.Thread
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		th, _, _, seen := tickRead(t, tr, tid)
		if seen && ok(&th) {
			return th
		}
		last = th
	}
	t.Fatalf("record for thread %d never matched; last: %+v", tid, last)
	return last
}

// bothPasses runs test with the pass of this kernel (walk_tasks from Linux 6.8) and
// with the per-task pass of older kernels (read_tasks), which this kernel runs as well.
func bothPasses(t *testing.T, test func(t *testing.T)) {
	t.Run("pass", test)
	t.Run("per-task pass", func(t *testing.T) {
		perTaskPass = true
		defer func() { perTaskPass = false }()
		test(t)
	})
}

func sum(times [state.TimedStates]uint64) uint64 {
	var n uint64
	for _, ns := range times {
		n += ns
	}
	return n
}

// A spinner stopped at both ends of a second of running: with no wait for a CPU in
// progress at either end, its on-CPU and runnable times are the kernel's, however loaded
// the machine (a wait in progress at a tick is runnable in the record before
// run_delay counts it; under load it can last hundreds of ms).
func TestTickModeSpinnerMatchesSchedstat(t *testing.T) {
	bothPasses(t, tickModeSpinnerMatchesSchedstat)
}

func tickModeSpinnerMatchesSchedstat(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	pid := workload.SpinnerProcess(t)
	// Stopped, then read twice a second apart: the second read finds nothing in progress,
	// and shows whatever the first could not fit in its interval.
	stopped := func() (state.Thread, uint64) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		tickFind(t, tr, pid, func(th *state.Thread) bool { return th.State == state.Stopped })
		time.Sleep(time.Second)
		th, _, tick, ok := tickRead(t, tr, pid)
		if !ok || th.State != state.Stopped {
			t.Fatalf("spinner not stopped in its record: %+v", th)
		}
		return th, tick
	}
	th0, tick0 := stopped()
	cpu0, run0 := workload.Schedstat(t, pid)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	tickRead(t, tr, pid) // a tick while it runs
	time.Sleep(time.Second)
	th1, tick1 := stopped()
	cpu1, run1 := workload.Schedstat(t, pid)
	syscall.Kill(pid, syscall.SIGCONT)

	got, want := float64(th1.CPUAt(tick1)-th0.CPUAt(tick0)), float64(cpu1-cpu0)
	t0, t1 := th0.TimesAt(tick0), th1.TimesAt(tick1)
	runnable, runDelay := float64(t1[state.Runnable]-t0[state.Runnable]), float64(run1-run0)
	t.Logf("on CPU: record %.0f ns, schedstat %.0f ns; runnable %.0f ns, run_delay %.0f ns; stopped %d ns; interval %d ns",
		got, want, runnable, runDelay, t1[state.Stopped]-t0[state.Stopped], tick1-tick0)
	if !within(got, want, 0.02) {
		t.Errorf("record says %.0f ns on CPU, schedstat %.0f ns: more than 2%% apart", got, want)
	}
	if want < float64(50*time.Millisecond) {
		t.Errorf("the spinner ran only %.0f ns: nothing to compare", want)
	}
	// Runnable is run_delay and the time the thread held a CPU that the kernel did not
	// count as its own (interrupts, the hypervisor's steal), as in the other modes: none
	// on the test machines, 3% of the running time under the kernel matrix's emulation.
	running := float64(tick1-tick0) - float64(t1[state.Stopped]-t0[state.Stopped])
	if runnable < runDelay*0.98 || runnable > runDelay*1.02+0.1*running {
		t.Errorf("runnable %.0f ns, run_delay %.0f ns: not run_delay (and at most a tenth of the %.0f ns running)",
			runnable, runDelay, running)
	}
	if th1.CPUAt(tick1) != t1[state.OnCPU] {
		t.Errorf("on-CPU time %d ns is not the kernel's count %d ns", t1[state.OnCPU], th1.CPUAt(tick1))
	}
	if got, want := sum(t1)-sum(t0), tick1-tick0; got != want {
		t.Errorf("the times add up to %d ns, the interval is %d ns", got, want)
	}
}

func TestTickModeSleeperIsInNanosleep(t *testing.T) { bothPasses(t, tickModeSleeperIsInNanosleep) }

func tickModeSleeperIsInNanosleep(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	sl := workload.Sleeper(t)
	th := tickFind(t, tr, sl.Tid, func(th *state.Thread) bool {
		return th.State == state.Sleeping && state.SyscallName(th.Syscall) == "nanosleep" && th.Voluntary > 0
	})
	// Asleep since at least the tick it was first seen asleep at, and in nanosleep as long.
	if th.SinceNs == 0 || th.SyscallNs == 0 {
		t.Errorf("sleeper's state or syscall has no start: %+v", th)
	}
	times := th.TimesAt(th.CPUSyncNs)
	if times[state.Sleeping] == 0 || times[state.Uninterruptible] != 0 {
		t.Errorf("sleeper's times: %v, want sleeping only (and a little CPU)", times)
	}
}

// A pass begins by reading each CPU's current task: the thread running the pass is that
// of its CPU then, so its record is on CPU there, and no other is (a CPU's runqueue is
// learned from the tasks of a first pass).
func TestTickModeReaderIsOnCPUAlone(t *testing.T) { bothPasses(t, tickModeReaderIsOnCPUAlone) }

func tickModeReaderIsOnCPUAlone(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	tickRead(t, tr, self)
	th, _, tick, seen := tickRead(t, tr, self)
	if !seen || th.State != state.OnCPU {
		t.Fatalf("the thread running the pass is %v (record %v), want on CPU", th.State, seen)
	}
	perCPU := map[int32][]int32{}
	tr.Scan(0, tick, nil, func(_ uint32, th *state.Thread) {
		if th.State == state.OnCPU {
			perCPU[th.CPU] = append(perCPU[th.CPU], th.Tid)
		}
	})
	for cpu, tids := range perCPU {
		if len(tids) > 1 {
			t.Errorf("CPU %d has %d threads on it: %v", cpu, len(tids), tids)
		}
	}
	if tids := perCPU[th.CPU]; len(tids) != 1 || tids[0] != int32(self) {
		t.Errorf("CPU %d, the pass's, has %v on it, want only %d", th.CPU, tids, self)
	}
}

func TestTickModeVforkParentIsUninterruptible(t *testing.T) {
	bothPasses(t, tickModeVforkParentIsUninterruptible)
}

func tickModeVforkParentIsUninterruptible(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	p := workload.VforkParent(t, 5*time.Second)
	th := tickFind(t, tr, p.Pid, func(th *state.Thread) bool { return th.State == state.Uninterruptible })
	if name := state.SyscallName(th.Syscall); name != "vfork" {
		t.Errorf("vfork parent is in syscall %q, want vfork", name)
	}
	// Seen in D at two ticks a second apart: the second interval is all D.
	time.Sleep(time.Second)
	th0, _, tick0, _ := tickRead(t, tr, p.Pid)
	time.Sleep(time.Second)
	th1, _, tick1, _ := tickRead(t, tr, p.Pid)
	d := th1.TimesAt(tick1)[state.Uninterruptible] - th0.TimesAt(tick0)[state.Uninterruptible]
	t.Logf("uninterruptible %d ns of %d ns", d, tick1-tick0)
	if th1.State != state.Uninterruptible || d != tick1-tick0 {
		t.Errorf("vfork parent was uninterruptible %d ns of %d ns (state %v)", d, tick1-tick0, th1.State)
	}
}

// A thread that exits is marked dead at the next iteration, and its slot, once freed, is
// handed to another thread.
func TestTickModeExitedThreadIsDead(t *testing.T) { bothPasses(t, tickModeExitedThreadIsDead) }

func tickModeExitedThreadIsDead(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	// A process reaped by this test: gone from the kernel's task list, never a zombie.
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tid := cmd.Process.Pid
	tickFind(t, tr, tid, func(th *state.Thread) bool { return th.State != state.Dead })
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	th, slot, _, seen := tickRead(t, tr, tid)
	if !seen || th.State != state.Dead {
		t.Fatalf("exited thread %d: record %v, state %v; want dead", tid, seen, th.State)
	}
	if err := tr.Free(slot); err != nil {
		t.Fatalf("Free(%d): %v", slot, err)
	}
	if _, _, _, seen := tickRead(t, tr, tid); seen {
		t.Errorf("thread %d still has a record after its slot was freed", tid)
	}
	// A new process: the one task sure to be new at the next iteration.
	pid := workload.Process(t, exec.Command("sleep", "10"))
	th, got, _, seen := tickRead(t, tr, pid)
	if !seen || th.State == state.Dead {
		t.Fatalf("no record for new process %d", pid)
	}
	if got != slot {
		t.Errorf("new process %d has slot %d; want the freed slot %d", pid, got, slot)
	}
}

// The pass lists the records the sampler reads at a tick (Scan with the previous tick):
// the same ones as a scan of every record that skips those quiet since before it, while
// threads run, sleep, wait in D, start and exit.
func TestTickModeListsTheRecordsToRead(t *testing.T) { bothPasses(t, tickModeListsTheRecordsToRead) }

func tickModeListsTheRecordsToRead(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	workload.SpinnerProcess(t)
	workload.VforkParent(t, 10*time.Second)
	workload.Process(t, exec.Command("sleep", "10"))
	slots := func(since, tick uint64, keep func(int32) bool) ([]uint32, []uint32) {
		var all, dead []uint32
		tr.Scan(since, tick, keep, func(slot uint32, th *state.Thread) {
			all = append(all, slot)
			if th.State == state.Dead {
				dead = append(dead, slot)
			}
		})
		slices.Sort(all)
		return all, dead
	}
	var prev uint64
	var listed int
	for i := range 30 {
		if i%3 == 0 {
			// A process that exits between two ticks, and one that exits at a tick.
			exec.Command("true").Run()
			short := exec.Command("sleep", "0.03")
			if err := short.Start(); err == nil {
				go short.Wait()
			}
		}
		tick := Now()
		if _, err := tr.Iterate(tick); err != nil {
			t.Fatal(err)
		}
		got, dead := slots(prev, tick, nil)
		if prev != 0 {
			// A keep that keeps none reads every record but the quiet ones.
			want, _ := slots(prev, tick, func(int32) bool { return false })
			if !slices.Equal(got, want) {
				t.Errorf("tick %d: the pass lists slots %v; the scan reads %v", i, got, want)
			}
			listed += len(got)
		}
		// As the sampler does: an exited thread's slot goes back once it is read.
		for _, slot := range dead {
			if err := tr.Free(slot); err != nil {
				t.Fatal(err)
			}
		}
		prev = tick
		time.Sleep(30 * time.Millisecond)
	}
	t.Logf("%d records read in 29 ticks, of %d slots", listed, tr.Slots())
}

// With schedstats on, the hook-free mode splits a thread's time off CPU by the kernel's
// own counts: over 3 s of a process that waits 10 ms in vfork (D), then sleeps 15 ms, and
// again, its record's uninterruptible and sleeping times equal the deltas of its
// sum_block_runtime and of sum_sleep_runtime less it (/proc/PID/sched), within 2% or
// 20 ms (an episode in progress at either end is in the record, not yet in the kernel's
// counts). This machine's kernel has no schedstats: the kernel matrix (test/kernels)
// runs it, with kernel.sched_schedstats=1.
func TestTickModeSleepAndDAreTheKernels(t *testing.T) {
	if !SchedstatsOn() {
		t.Skip("schedstats are off or not in this kernel: test/kernels runs this with kernel.sched_schedstats=1")
	}
	bothPasses(t, tickModeSleepAndDAreTheKernels)
}

func tickModeSleepAndDAreTheKernels(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	pid := workload.VforkCycles(t, 5*time.Second, 10*time.Millisecond, 15*time.Millisecond).Pid
	tickFind(t, tr, pid, func(th *state.Thread) bool { return th.State != state.Dead })
	first, _, tick0, _ := tickRead(t, tr, pid)
	sleep0, block0 := sleepCounts(t, pid)
	var last state.Thread
	var tick1 uint64
	for range 60 {
		time.Sleep(50 * time.Millisecond)
		last, _, tick1, _ = tickRead(t, tr, pid)
	}
	sleep1, block1 := sleepCounts(t, pid)
	if last.SplitEstimated {
		t.Error("the record says its split of sleeping and D is estimated, with schedstats on")
	}
	before, after := first.TimesAt(tick0), last.TimesAt(tick1)
	gotD := float64(after[state.Uninterruptible] - before[state.Uninterruptible])
	gotS := float64(after[state.Sleeping] - before[state.Sleeping])
	wantD := float64(block1 - block0)
	wantS := float64(sleep1-sleep0) - wantD
	t.Logf("D %.1f ms (kernel %.1f), sleeping %.1f ms (kernel %.1f)", gotD/1e6, wantD/1e6, gotS/1e6, wantS/1e6)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"uninterruptible", gotD, wantD}, {"sleeping", gotS, wantS}} {
		if slack := max(0.02*c.want, 20e6); c.got < c.want-slack || c.got > c.want+slack {
			t.Errorf("%s: %.1f ms in the record, the kernel counted %.1f", c.name, c.got/1e6, c.want/1e6)
		}
	}
}

// A record says whether its split between sleeping and D is estimated: in the hook-free
// mode, a user thread's is counted with schedstats on (the kernel matrix runs this with
// them) and estimated without (this machine's kernel has none), a kernel thread's is
// always estimated (split_off_cpu); in the full mode, whose hooks see every switch, it
// never is.
func TestTickModeSaysWhetherItsSplitIsCounted(t *testing.T) {
	bothPasses(t, tickModeSaysWhetherItsSplitIsCounted)
}

func tickModeSaysWhetherItsSplitIsCounted(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	sl := workload.Sleeper(t)
	th := tickFind(t, tr, sl.Tid, func(th *state.Thread) bool { return th.State == state.Sleeping })
	if want := !SchedstatsOn(); th.SplitEstimated != want {
		t.Errorf("a sleeping user thread's record says estimated %v, want %v (schedstats on: %v)", th.SplitEstimated, want, SchedstatsOn())
	}
	// kthreadd, pid 2, the parent of every kernel thread.
	if kt, _, _, seen := tickRead(t, tr, 2); !seen || !kt.SplitEstimated {
		t.Errorf("kthreadd's record (found %v) says estimated %v, want true", seen, kt.SplitEstimated)
	}
	full := openTracker(t, Config{})
	if th := find(t, full, sl.Tid, func(th *state.Thread) bool { return th.State == state.Sleeping }); th.SplitEstimated {
		t.Error("the full mode's record of the sleeper says its split is estimated")
	}
}

// sleepCounts reads a thread's sum_sleep_runtime and sum_block_runtime from
// /proc/PID/sched (ms with six decimals there), in ns.
func sleepCounts(t *testing.T, pid int) (sleep, block uint64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/sched", pid))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch strings.TrimSpace(name) {
		case "sum_sleep_runtime":
			dst = &sleep
		case "sum_block_runtime":
			dst = &block
		default:
			continue
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("%s in /proc/%d/sched: %v", name, pid, err)
		}
		*dst = uint64(ms * 1e6)
		found++
	}
	if found != 2 {
		t.Fatalf("/proc/%d/sched has no sum_sleep_runtime or sum_block_runtime:\n%s", pid, b)
	}
	return sleep, block
}

// hooksOf lists the links attached in the whole kernel whose programs use the tracker's
// map of that name (its records: the tracker's own), by program name and link type.
func hooksOf(t *testing.T, tr *Tracker, mapName string) map[string]link.Type {
	t.Helper()
	info, err := tr.coll.Maps[mapName].Info()
	if err != nil {
		t.Fatal(err)
	}
	records, _ := info.ID()
	hooks := map[string]link.Type{}
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		li, err := it.Link.Info()
		if err != nil {
			continue // gone meanwhile
		}
		prog, err := ebpf.NewProgramFromID(li.Program)
		if err != nil {
			continue
		}
		pi, err := prog.Info()
		prog.Close()
		if err != nil {
			t.Fatal(err)
		}
		maps, _ := pi.MapIDs()
		if slices.Contains(maps, records) {
			hooks[pi.Name] = li.Type
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return hooks
}

// No program of the hook-free mode is attached to a tracepoint: the task iterator's link
// is the only one, and it runs only when read. The same listing finds the hooks of the
// passive mode, so it would see them.
func TestTickModeAttachesNoHook(t *testing.T) {
	tick := openTracker(t, Config{Syscalls: SyscallsTick})
	hooks := hooksOf(t, tick, threadcapMapRecords)
	t.Logf("hook-free mode's links: %v", hooks)
	// The pass is one call from Linux 6.8 on, one per task before (taskiter.bpf.c).
	pass := "read_tasks"
	if walk, err := kernelHas(kfuncHas("bpf_iter_task_new")); err != nil {
		t.Fatal(err)
	} else if walk {
		pass = "walk_tasks"
	}
	if len(hooks) != 1 || hooks[pass] != link.IterType {
		t.Errorf("links of the hook-free mode: %v; want only %s, an iterator", hooks, pass)
	}
	// With no switch to capture them at, no row is to carry a stack.
	if st := tick.StackStates(); len(st) != 0 {
		t.Errorf("the hook-free mode says it captures the stacks of %v", st)
	}
	passive := openTracker(t, Config{Syscalls: SyscallsPassive})
	if st := passive.StackStates(); !slices.Equal(st, []state.State{state.Uninterruptible}) {
		t.Errorf("the passive mode says it captures the stacks of %v, want D's", st)
	}
	hooks = hooksOf(t, passive, threadcapMapRecords)
	t.Logf("passive mode's links: %v", hooks)
	for _, name := range []string{"on_switch", "on_wakeup", "on_idle", "on_timer"} {
		if typ, ok := hooks[name]; !ok || typ == link.IterType {
			t.Errorf("the listing does not find passive mode's %s: %v", name, hooks)
		}
	}
	// With spans: their probes and, in the hook-free mode only, the thread exit that
	// forgets a thread's spans (the other modes do at its last switch).
	bin := workload.SpanWork(t)
	for _, mode := range []SyscallMode{SyscallsTick, SyscallsFull} {
		tr := openTracker(t, Config{Syscalls: mode, Spans: spanworkProbes(t, bin)})
		hooks := hooksOf(t, tr, threadcapMapSpanThreads)
		t.Logf("%s mode's links with spans: %v", mode, hooks)
		_, exit := hooks["on_exit_spans"]
		if _, probes := hooks["on_span_probe"]; !probes || exit != (mode == SyscallsTick) {
			t.Errorf("%s mode's links with spans: %v; want on_span_probe's, and on_exit_spans in the hook-free mode only", mode, hooks)
		}
		if mode == SyscallsTick && len(hooks) != 2 {
			t.Errorf("the hook-free mode's links with spans: %v; want on_span_probe's and on_exit_spans only", hooks)
		}
	}
}
