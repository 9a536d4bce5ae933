// SPDX-License-Identifier: Apache-2.0

package state

import "time"

// Unknown marks an integer field of a Sample that has no value; it is written as an empty
// CSV field.
const Unknown = -1

// Sample is one row of output: what one thread was doing at one tick, and how it spent
// the time since the previous tick. Durations are microseconds.
type Sample struct {
	Time     time.Time // the tick
	Pid, Tid int32
	Process  string // the process's name (its main thread's comm)
	Thread   string // the thread's name
	User     string // the process's user name (or numeric uid)
	State    State
	// StateUs is how long the thread has been in State, or Unknown.
	StateUs int64
	// Syscall is the syscall in progress by name; "" in user space or when unknown.
	Syscall string
	// SyscallUs is how long the syscall has run so far; SyscallCPUUs how much of that was
	// on CPU. Both are Unknown when there is no syscall or it cannot be told.
	SyscallUs, SyscallCPUUs int64
	// Args are the syscall's six raw arguments; meaningful only when Syscall is set.
	Args [6]uint64
	CPU  int32 // the CPU it runs on, or last ran on; Unknown if never seen
	// StateTimeUs is the time spent in each timed state since the previous tick
	// (on CPU, runnable, sleeping, uninterruptible, stopped); Unknown for a seeded thread.
	StateTimeUs [TimedStates]int64
	// SplitEstimated says StateTimeUs's sleeping and uninterruptible parts are their sum,
	// which is the kernel's, split by the states seen at the ticks (the hook-free mode
	// without schedstats), not each counted.
	SplitEstimated bool
	// Voluntary and Involuntary are context switches since the previous tick, or Unknown.
	Voluntary, Involuntary int64
	Exe                    string // the process's executable path
	Seeded                 bool   // read from /proc: the kernel side has not observed this thread yet
	Wchan                  string // kernel function the thread waits in: from its stack, or /proc when seeded
	// Cgroup is the thread's cgroup v2 path, such as /system.slice/mysql.service.
	Cgroup string
	// FdTarget names what the syscall's file descriptor argument is: a path, or a socket's
	// protocol and addresses. "" for syscalls without one.
	FdTarget string
	// KernelStack is the kernel stack of an off-CPU thread, captured when it left the CPU;
	// nil when not captured.
	KernelStack *Stack
	// UserStack is the user-space stack captured with KernelStack, when asked for.
	UserStack *Stack
	// IODev names the disk of the oldest block request the thread submitted that was in
	// flight at the tick, as lsblk does; "" when none. IOOp, IOBytes are that request's
	// operation and size, IOUs how long it had been in flight and IOQueueUs how much of that
	// it waited in the queue before the driver took it; all meaningful only with IODev.
	IODev                    string
	IOOp                     string
	IOBytes, IOUs, IOQueueUs int64
	// Span is the innermost span the thread was in at the tick ("" for none), SpanUs how
	// long it had been in it (not written without a span), SpanArg the string its start
	// captured.
	Span    string
	SpanUs  int64
	SpanArg string
	// Cmdline is the process's command line, its arguments joined by spaces.
	Cmdline string
	// Container, PodUID and Unit are whose the thread is, as its Cgroup tells (see
	// procinfo.ParseCgroup): the runtime and short id or name of the innermost container,
	// the Kubernetes pod's UID and the innermost systemd unit; "" when it does not say.
	Container, PodUID, Unit string
	// TCP is the TCP socket the syscall's file descriptor is, at the tick; its State is ""
	// for every other row.
	TCP TCPInfo
}

// TCPInfo is a TCP connection as the kernel's tcp_info shows it (ss -ti).
type TCPInfo struct {
	State string // ESTABLISHED, CLOSE_WAIT..., as ss names states; "" for none
	// SrttUs is the smoothed round-trip time; Retrans the retransmissions of the whole
	// connection, Lost the segments presumed lost now; Cwnd the congestion window and
	// Unacked the segments sent and not acknowledged; RcvQueue the bytes received and not
	// read, SndQueue the bytes written and not acknowledged.
	SrttUs, Retrans, Lost, Cwnd, Unacked, RcvQueue, SndQueue int64
}
