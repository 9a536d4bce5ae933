// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// openDeferred opens a tracker with the default stacks, which this kernel defers.
func openDeferred(t *testing.T) *Tracker {
	t.Helper()
	ok, err := canDeferStacks()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("the kernel lacks bpf_task_from_pid (Linux 6.2): stacks are walked at every switch-out")
	}
	tr := openTracker(t, Config{})
	if tr.DeferredStacks() == nil {
		t.Fatal("the default stacks are not deferred on a kernel that allows it")
	}
	return tr
}

// kernelFrames reports whether ips holds frames, every one a kernel address.
func kernelFrames(ips []uint64) bool {
	for _, ip := range ips {
		if ip < 0xffff800000000000 {
			return false
		}
	}
	return len(ips) > 0
}

// A thread still in D: its record holds no stack (no walk at its switch-out), and asking
// walks it, once; asked with another start time (a reused tid), it gets none.
func TestDeferredStackOfAnOpenEpisodeIsAsked(t *testing.T) {
	tr := openDeferred(t)
	p := workload.VforkParent(t, 5*time.Second)
	th := find(t, tr, p.Pid, func(th *state.Thread) bool { return th.State == state.Uninterruptible })
	if th.KernelStack != 0 {
		t.Errorf("the record holds stack %d: a stack was walked at the switch-out", th.KernelStack)
	}
	before, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	asks := []KernelStackAsk{{Tid: int32(p.Pid), StartNs: th.StartNs}, {Tid: int32(p.Pid), StartNs: th.StartNs + 1}}
	if err := tr.AskKernelStacks(asks); err != nil {
		t.Fatal(err)
	}
	after, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	if got := asks[0].Ips[:asks[0].Nr]; !kernelFrames(got) {
		t.Errorf("the vfork parent's stack, asked: %x", got)
	}
	if asks[1].Nr != 0 {
		t.Errorf("a thread asked with another start time got %d frames", asks[1].Nr)
	}
	if after-before != 1 {
		t.Errorf("%d stacks walked for one ask", after-before)
	}
}

// A D episode that spanned a tick and ended before the read was walked as it ended; a
// thread whose D episodes all begin and end between ticks costs no walk.
func TestDeferredStacksWalkOnlyWhatATickSees(t *testing.T) {
	tr := openDeferred(t)
	cycles := workload.VforkCycles(t, 5*time.Second, 10*time.Millisecond, 15*time.Millisecond)
	find(t, tr, cycles.Pid, func(th *state.Thread) bool { return true })
	ended := map[int32][]uint64{}
	for range 50 {
		tick := Now()
		tr.SetTick(tick)
		time.Sleep(40 * time.Millisecond)
		if err := tr.TickKernelStacks(tick, ended); err != nil {
			t.Fatal(err)
		}
		if _, ok := ended[int32(cycles.Pid)]; ok {
			break
		}
	}
	if ips, ok := ended[int32(cycles.Pid)]; !ok || !kernelFrames(ips) {
		t.Errorf("no tick in 50 found a stack walked as a 10 ms D episode of the parent ended: %x", ips)
	}

	// 1 ms in D, 1 ms asleep, for a second, with no tick: some 500 episodes.
	short := workload.VforkCycles(t, 2*time.Second, time.Millisecond, time.Millisecond)
	find(t, tr, short.Pid, func(th *state.Thread) bool { return th.State == state.Uninterruptible })
	tr.SetTick(Now())
	time.Sleep(50 * time.Millisecond) // what a tick saw ends
	before, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	var in, out uint64
	start := time.Now()
	for time.Since(start) < time.Second {
		th := find(t, tr, short.Pid, func(*state.Thread) bool { return true })
		in, out = th.Voluntary, th.Involuntary
		time.Sleep(100 * time.Millisecond)
	}
	after, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d switches of the parent; %d stacks walked meanwhile", in+out, after-before)
	if after-before > 10 {
		t.Errorf("%d stacks walked in a second without a tick", after-before)
	}
}
