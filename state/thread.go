// SPDX-License-Identifier: Apache-2.0

package state

// NoSyscall is Thread.Syscall for a thread in user space, or whose syscall is unknown.
const NoSyscall = -1

// Thread is one thread as the kernel side last recorded it, or as /proc showed it to a
// seeding pass. Times are CLOCK_MONOTONIC nanoseconds, the kernel's bpf_ktime_get_ns.
type Thread struct {
	Tid, Pid int32
	Comm     [16]byte // the thread's name, NUL-padded
	State    State
	// PrevState is the state the thread was in before SinceNs.
	PrevState State
	CPU       int32
	// SinceNs is when State began; 0 when unknown (a seeded thread).
	SinceNs uint64
	// StateNs is the cumulative time spent in each timed state up to SinceNs.
	StateNs [TimedStates]uint64
	// CPUNs is the kernel's own count of the thread's CPU time (se.sum_exec_runtime, what
	// schedstat shows) over the same span, up to CPUSyncNs.
	CPUNs uint64
	// CPUSyncNs is when CPUNs was brought up to date: a switch, or, while on CPU, a timer.
	CPUSyncNs uint64
	// Voluntary and Involuntary count switches off CPU: slept, and preempted or yielded.
	Voluntary, Involuntary uint64
	// Syscall is the syscall in progress, NoSyscall when none or unknown.
	Syscall int32
	// SyscallNs is when the syscall began (passive mode: when the thread left the CPU in it).
	SyscallNs uint64
	// SyscallOnCPUNs is StateNs[OnCPU] as it stood when the syscall began.
	SyscallOnCPUNs uint64
	Args           [6]uint64
	// LastSyscall and LastRet are the last completed syscall and its return (full mode).
	LastSyscall int32
	LastRet     int64
	// StartNs is the thread's start time; with Tid it identifies the thread across tid reuse.
	StartNs uint64
	// ExecGen changes whenever the process execs.
	ExecGen uint32
	// CgroupID is the thread's cgroup v2 id (its cgroupfs inode); 0 when unknown.
	CgroupID uint64
	// KernelStack and UserStack are the stack ids (+1; 0: none) captured when the thread
	// last switched out to State, if stacks are captured for that state.
	KernelStack, UserStack uint16
	// TickStacks says KernelStack and UserStack were taken while the thread ran, at the
	// first timer on its CPU after the tick (see bpf's tick_stacks), not at a switch-out.
	TickStacks bool
	// SplitEstimated says StateNs's sleeping and uninterruptible parts are their sum split
	// by the states seen at the ticks (see bpf's split_off_cpu), not each counted.
	SplitEstimated bool
	// Seeded is set for a thread read from /proc that the kernel side has not observed yet.
	Seeded bool
	// Wchan is the kernel function a seeded thread waits in, from /proc.
	Wchan string
}

// Name is the thread's name as a string.
func (t *Thread) Name() string {
	n := 0
	for n < len(t.Comm) && t.Comm[n] != 0 {
		n++
	}
	return string(t.Comm[:n])
}

// StateAt is the thread's state at mono: State, or PrevState if State began after mono.
// The sampler asks for the state at the tick's instant, before its own wakeup could
// preempt the thread it looks at.
func (t *Thread) StateAt(mono uint64) State {
	if t.SinceNs > mono {
		return t.PrevState
	}
	return t.State
}

// CPUAt is the kernel's count of the thread's CPU time at now: its count as of CPUSyncNs,
// and for a thread on CPU the time since then as the clock measures it.
func (t *Thread) CPUAt(now uint64) uint64 {
	ns := t.CPUNs
	from := max(t.SinceNs, t.CPUSyncNs)
	if t.State == OnCPU && t.SinceNs != 0 && now > from {
		ns += now - from
	}
	return ns
}

// TimesAt is the cumulative time in each timed state at now, counting the stretch in
// progress. A seeded thread's stretch began at an unknown time and counts from nothing.
func (t *Thread) TimesAt(now uint64) [TimedStates]uint64 {
	ns := t.StateNs
	if int(t.State) < TimedStates && t.SinceNs != 0 && now > t.SinceNs {
		ns[t.State] += now - t.SinceNs
	}
	return ns
}
