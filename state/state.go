// SPDX-License-Identifier: Apache-2.0

// Package state is threadcap's model of what a thread is doing: the state vocabulary, the
// thread as the kernel side records it, the sample row written for it, syscall names, and
// seeding from /proc for threads the kernel side has not seen yet.
package state

import "fmt"

// State is what a thread is doing. The numbering matches enum tc_state in bpf/threadcap.h.
type State uint8

const (
	OnCPU           State = iota // running on a CPU
	Runnable                     // woken or preempted, waiting for a CPU
	Sleeping                     // interruptible sleep (S), idle kernel threads (I), parked
	Uninterruptible              // D: disk I/O, vfork wait, uninterruptible locks
	Stopped                      // stopped by a signal or a tracer (T, t)
	Dead                         // exited (Z, X)
)

// TimedStates is how many states have a cumulative time: every state before Dead.
const TimedStates = int(Dead)

var stateNames = [...]string{"on_cpu", "runnable", "sleeping", "uninterruptible", "stopped", "dead"}

// String is the state's name as written to CSV files.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Active reports whether a thread in this state is doing or waiting for work: on CPU,
// waiting for one, or blocked uninterruptibly.
func (s State) Active() bool {
	return s == OnCPU || s == Runnable || s == Uninterruptible
}

// FromProc maps the state letter of /proc/PID/task/TID/stat. /proc says R for a thread on
// a CPU and for one waiting for a CPU alike; it is taken as waiting, since a thread that
// runs hits one of the kernel side's probes within a scheduler tick (at the latest the
// timer that is the tick) and is then no longer seeded.
func FromProc(letter string) (State, error) {
	switch letter {
	case "R":
		return Runnable, nil
	case "S", "I", "P", "W":
		return Sleeping, nil
	case "D":
		return Uninterruptible, nil
	case "T", "t":
		return Stopped, nil
	case "Z", "X", "x":
		return Dead, nil
	}
	return 0, fmt.Errorf("unknown /proc thread state %q", letter)
}
