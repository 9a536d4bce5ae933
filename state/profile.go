// SPDX-License-Identifier: Apache-2.0

package state

import "time"

// ProfileRow is what the CPU profile counted in one minute for one thread with one pair of
// stacks: a line of the profile file.
type ProfileRow struct {
	Minute          time.Time
	Pid, Tid        int32
	Process, Thread string
	// KernelStack is nil for samples in user code (or a stack lost), UserStack for kernel
	// threads' samples (or a stack lost).
	KernelStack, UserStack *Stack
	// Span is the innermost span the thread had open (spans in the config), "" for none.
	Span    string
	Samples uint64
	// Hz is the profile's rate: each sample stands for 1/Hz s of CPU.
	Hz int
}
