// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"fmt"
	"time"

	"github.com/threadcap/threadcap/state"
)

// snapshot is what the sampler keeps of a record between ticks: enough to know the
// thread's cumulative times at the previous tick, read or not.
type snapshot struct {
	tid        int32
	startNs    uint64
	state      state.State
	sinceNs    uint64
	stateNs    [state.TimedStates]uint64
	cpuNs      uint64
	cpuSyncNs  uint64
	vol, invol uint64
	// carry is CPU time the kernel counted that no row could show yet (see reconcileCPU).
	carry int64
	// kstack is the last episode off CPU given a deferred kernel stack (deferred.go).
	kstack episode
	// tcp is where the kernel side last found the sock of a socket the thread waited on.
	tcp knownSock
}

// timesAt is the cumulative time per state at mono. A thread skipped by a scan was asleep
// and unchanged since before the previous tick, so its snapshot still holds.
func (p *snapshot) timesAt(mono uint64) [state.TimedStates]uint64 {
	th := state.Thread{State: p.state, SinceNs: p.sinceNs, StateNs: p.stateNs}
	return th.TimesAt(mono)
}

// cpuAt is the kernel's count of the thread's CPU time at mono, likewise.
func (p *snapshot) cpuAt(mono uint64) uint64 {
	th := state.Thread{State: p.state, SinceNs: p.sinceNs, CPUNs: p.cpuNs, CPUSyncNs: p.cpuSyncNs}
	return th.CPUAt(mono)
}

// reconcileCPU makes a row's on-CPU time the kernel's count of it (kernelUs), which is what
// schedstat, top and getrusage show. The clock between two sched_switch events and the
// kernel's count differ by microseconds a switch, and not at random: when a wakeup
// preempts the running thread, the scheduler skips its clock update and charges the woken
// thread from an earlier instant, so over a busy second the woken database backends and
// the spinner they preempt drift apart by a few percent. The difference is taken from the
// row's waiting times (runnable first), or given to runnable when the kernel counted less;
// what the row cannot absorb is carried to the thread's next row, so that the row's times
// still add up to its interval and the sums over many rows are the kernel's.
func reconcileCPU(t *[state.TimedStates]int64, kernelUs, carry int64) int64 {
	d := kernelUs - t[state.OnCPU] + carry
	if d < 0 {
		give := min(-d, t[state.OnCPU])
		t[state.OnCPU] -= give
		t[state.Runnable] += give
		return d + give
	}
	for _, w := range [...]state.State{state.Runnable, state.Sleeping, state.Uninterruptible, state.Stopped} {
		take := min(d, t[w])
		t[w] -= take
		t[state.OnCPU] += take
		d -= take
	}
	return d
}

// Tick samples once, as of the instant wall: every row shows its thread as it was at that
// one instant, however late the sampler woke and however long reading takes, because the
// kernel side was told of the instant before it came (see arm) and kept each record's
// view as of it. A tick that was not armed (the first, or one a caller asks for) takes
// the instant it is called at.
func (s *Sampler) Tick(wall time.Time) error {
	began := s.cfg.Mono()
	mono := s.armed.mono
	if mono == 0 || !s.armed.wall.Equal(wall) {
		mono = s.cfg.Mono()
		s.src.SetTick(mono)
	}
	s.armed = armedTick{}
	since := s.prevMono
	if s.cfg.Filter.All {
		since = 0 // sleepers get rows too: read them all
	}
	s.rows = s.rows[:0]
	s.writeErr = nil
	s.dead = s.dead[:0]
	s.fds.NextTick()
	if s.ioStats != nil {
		// Before the tick's rows, which may open the next hour's files: a minute's block
		// I/O goes to the file of its hour.
		s.ioStats.tick(wall)
	}
	if s.io != nil {
		s.io.read(mono, wall)
	}
	if s.cfg.Spans != nil {
		s.writeSpans(wall, false)
		s.readOpenSpans(mono)
	}
	// A thread inside a span at the tick gets a row whatever its state (see addRow), so it
	// is read even when asleep since before the previous tick.
	var inSpan func(int32) bool
	if len(s.spans.open) > 0 {
		inSpan = func(tid int32) bool { _, ok := s.spans.open[uint32(tid)]; return ok }
	}
	s.iterate(mono)
	s.deferred.begin(mono, wall)
	s.src.Scan(since, mono, inSpan, func(slot uint32, th *state.Thread) { s.observe(slot, th, mono, wall) })
	for _, th := range s.seeded {
		if s.cfg.Filter.All || th.State.Active() {
			s.addRow(th, wall, mono, noSlot, nil)
		}
	}
	var err error
	for _, slot := range s.dead {
		if ferr := s.src.Free(slot); ferr != nil && err == nil {
			err = ferr
		}
	}
	s.prevMono = mono
	s.stats.Ticks++
	s.procs.Expire(wall)
	s.cgroups.Expire(wall)
	s.fds.Expire(wall)
	if s.ustacks != nil {
		s.ustacks.Expire(wall)
	}
	s.checkLosses(wall)
	s.pruneStacks(wall)
	s.flush(wall)
	if s.kstacks != nil {
		s.kstacks.Load() // from the first tick on: see symbolize.KernelStacks.Load
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Ticked(TickReport{
			Took: time.Duration(s.cfg.Mono() - began), Stats: s.stats, Tracked: s.tracked, Seeded: len(s.seeded),
		})
	}
	if s.writeErr != nil {
		return s.writeErr
	}
	return err
}

// rowBatch bounds the rows a tick holds before handing them to the sink. A tick at which
// 10,000 threads had run held all their rows, and the sink all their CSV, at once: some
// 10 MB more at the daemon's peak, 40 MB with 50,000 threads.
const rowBatch = 1024

// flush hands the tick's rows so far to the sink, with their TCP sockets read in one batch. The last flush of a tick is made even
// without rows: the sink learns of the tick (and of a new hour) either way.
func (s *Sampler) flush(wall time.Time) {
	s.fillTCP(wall)
	s.deferred.fill(s.rows, s.prev, s.kstacks, wall)
	if s.cfg.Observer != nil {
		s.cfg.Observer.Rows(wall, s.rows)
	}
	if err := s.sink.Write(wall, s.rows); err != nil && s.writeErr == nil {
		s.writeErr = fmt.Errorf("writing tick %s: %w", wall.Format(time.RFC3339), err)
	}
	s.stats.Rows += uint64(len(s.rows))
	s.rows = s.rows[:0]
}

// observe turns one record into a row if the filter wants it, and remembers it.
func (s *Sampler) observe(slot uint32, th *state.Thread, mono uint64, wall time.Time) {
	for int(slot) >= len(s.prev) {
		s.prev = append(s.prev, snapshot{})
	}
	p := &s.prev[slot]
	if th.StartNs > mono || firstSeenAfter(th, mono) {
		// Born after the tick, or first seen by the kernel side after it: it first shows
		// at the next tick, with its whole life, or all of it seen, so far (a thread
		// seeded from /proc keeps its seeded row at this one).
		return
	}
	known := p.tid == th.Tid && p.startNs == th.StartNs && p.tid != 0
	if p.tid == 0 {
		s.tracked++
	}
	if !known {
		// A thread first seen by the kernel side is no longer a seeded guess.
		delete(s.seeded, th.Tid)
		*p = snapshot{tid: th.Tid, startNs: th.StartNs}
	}
	if th.Pid != s.cfg.Self {
		s.addRow(th, wall, mono, slot, p)
	}
	if th.State == state.Dead {
		s.dead = append(s.dead, slot)
		s.procs.Exited(th)
		if th.Tid == th.Pid {
			s.fds.Exited(th.Pid)
			if s.ustacks != nil {
				s.ustacks.Exited(th.Pid)
			}
		}
		*p = snapshot{}
		s.tracked--
		return
	}
	*p = snapshot{
		tid: th.Tid, startNs: th.StartNs, state: th.State, sinceNs: th.SinceNs,
		stateNs: th.StateNs, cpuNs: th.CPUNs, cpuSyncNs: th.CPUSyncNs, vol: th.Voluntary, invol: th.Involuntary,
		carry: p.carry, kstack: p.kstack, tcp: p.tcp,
	}
}

// fitInterval turns the differences of a thread's cumulative times into a row's times.
// They add up to the interval, but one can be negative: a repair of a switch the kernel
// did not report (see bpf's unseen_switch_out) moves time from a state an earlier row
// already showed. That state shows nothing in this row, and what it gave back comes off
// the row's largest times, so that the row still adds up to its interval.
func fitInterval(raw [state.TimedStates]int64) [state.TimedStates]int64 {
	var t [state.TimedStates]int64
	var owed int64
	for i, us := range raw {
		if us < 0 {
			owed -= us
		} else {
			t[i] = us
		}
	}
	for owed > 0 {
		largest := 0
		for i := range t {
			if t[i] > t[largest] {
				largest = i
			}
		}
		if t[largest] == 0 {
			break
		}
		take := min(owed, t[largest])
		t[largest] -= take
		owed -= take
	}
	return t
}

// firstSeenAfter tells a record the kernel side gave its thread after the instant mono:
// the view it holds of that instant is its first, from later on, with no time in it.
func firstSeenAfter(th *state.Thread, mono uint64) bool {
	return th.SinceNs > mono && th.PrevState == th.State && th.StateNs == [state.TimedStates]uint64{}
}

// addRow appends th's row if the filter wants it. prev is the thread's snapshot from the
// previous tick (zero for a thread new since then), that of its record's slot; nil, and
// slot noSlot, for a seeded thread.
func (s *Sampler) addRow(th *state.Thread, wall time.Time, mono uint64, slot uint32, prev *snapshot) {
	row := state.Sample{
		Time: wall, Pid: th.Pid, Tid: th.Tid, Thread: th.Name(), State: th.StateAt(mono),
		StateUs: state.Unknown, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown,
		CPU: th.CPU, Voluntary: state.Unknown, Involuntary: state.Unknown,
		Seeded: th.Seeded, Wchan: th.Wchan,
	}
	// A thread that exited shows once more, whatever its last stretch held: in the
	// hook-free mode it may hold no active time at all (see bpf's taskiter.bpf.c).
	busy := row.State.Active() || row.State == state.Dead
	times := th.TimesAt(mono)
	if prev == nil {
		row.StateTimeUs = [state.TimedStates]int64{state.Unknown, state.Unknown, state.Unknown, state.Unknown, state.Unknown}
	} else {
		before := prev.timesAt(s.prevMono)
		var raw [state.TimedStates]int64
		for i := range times {
			// Whole microseconds of the cumulative times, so that rows add up exactly.
			raw[i] = int64(times[i]/1000) - int64(before[i]/1000)
		}
		row.StateTimeUs = fitInterval(raw)
		row.SplitEstimated = th.SplitEstimated
		kernelUs := int64(th.CPUAt(mono)/1000) - int64(prev.cpuAt(s.prevMono)/1000)
		prev.carry = reconcileCPU(&row.StateTimeUs, kernelUs, prev.carry)
		row.Voluntary = int64(th.Voluntary - prev.vol)
		row.Involuntary = int64(th.Involuntary - prev.invol)
		busy = busy || row.StateTimeUs[state.OnCPU] > 0 || row.StateTimeUs[state.Runnable] > 0 ||
			row.StateTimeUs[state.Uninterruptible] > 0
		if row.State == th.State && th.SinceNs != 0 && mono > th.SinceNs {
			row.StateUs = int64(mono-th.SinceNs) / 1000
		}
	}
	// A thread inside a span is an active session, on CPU or waiting, asleep included
	// (a backend waiting on a lock): it gets a row at every tick it is in one.
	if !busy && !s.cfg.Filter.All && !s.inSpanAt(th) {
		return
	}
	if !s.cfg.Filter.wantsPid(th.Pid) {
		return
	}
	proc := s.procs.Get(th, wall)
	if !s.cfg.Filter.wantsProcess(proc) {
		return
	}
	row.Process, row.User, row.Exe, row.Cmdline = proc.Name, proc.User, proc.Exe, proc.Cmdline
	if s.cfg.Spans != nil {
		s.addSpan(&row, th, mono)
	}
	if !s.cfg.NoCgroup {
		// A seeded thread has no cgroup id yet: its process's cgroup stands in.
		row.Cgroup = s.cgroups.Path(th.CgroupID, th.Pid, th.Tid, wall)
		if row.Cgroup == "" {
			row.Cgroup = proc.Cgroup
		}
		w := s.workloads.Of(row.Cgroup)
		row.Container, row.PodUID, row.Unit = w.Container, w.PodUID, w.Unit
	}
	s.addStack(&row, th, mono, slot, prev)
	if s.io != nil {
		s.io.fill(&row, th, mono)
	}
	if th.Syscall != state.NoSyscall {
		row.Syscall = state.SyscallName(th.Syscall)
		row.Args = th.Args
		if !s.cfg.NoFdTarget {
			row.FdTarget = s.fds.Target(row.Syscall, th.Args[0], th.Pid, th.Tid, th.SyscallNs, wall)
			s.askTCP(&row, th, slot, wall)
		}
		if th.SyscallNs != 0 && mono > th.SyscallNs {
			row.SyscallUs = int64(mono-th.SyscallNs) / 1000
			onCPU := times[state.OnCPU]
			row.SyscallCPUUs = int64(onCPU-min(onCPU, th.SyscallOnCPUNs)) / 1000
		}
	}
	s.rows = append(s.rows, row)
	if len(s.rows) == rowBatch {
		s.flush(wall)
	}
}

// addStack gives a row the stacks of its thread: for an off-CPU row, those captured when
// the thread went off CPU, and the function it waits in; a record's stack is from its last
// switch-out, so only a row in that same state, at the tick, gets it. For an on-CPU row,
// those the kernel side took while the thread ran, just after the tick mono (TickStacks).
func (s *Sampler) addStack(row *state.Sample, th *state.Thread, mono uint64, slot uint32, prev *snapshot) {
	if s.deferred != nil && s.kstacks != nil && prev != nil && row.State == th.State {
		s.deferred.add(row, th, len(s.rows), slot, prev, s.kstacks)
	}
	if s.kstacks == nil || (th.KernelStack == 0 && th.UserStack == 0) || row.State != th.State {
		return
	}
	since := th.SinceNs
	switch {
	case row.State == state.OnCPU && th.TickStacks:
		since = mono
	case row.State != state.Sleeping && row.State != state.Uninterruptible:
		return
	}
	if th.KernelStack != 0 && s.stackValid(th.KernelStack, since) {
		ks := s.kstacks.Get(th.KernelStack)
		if ks.Stack != nil {
			row.KernelStack, row.Wchan = ks.Stack, ks.Wchan
		}
	}
	if th.UserStack != 0 && s.stackValid(th.UserStack, since) {
		row.UserStack = s.ustacks.Get(th, row.Time)
	}
}
