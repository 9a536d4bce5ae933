// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/threadcap/threadcap/state"
)

// Deferred kernel stacks: with kernel stacks only (no user stacks off CPU), outside the
// hook-free mode, on a kernel with bpf_task_from_pid (Linux 6.2), a switch-out walks no
// stack. An episode in a state that gets one (D by default) is walked only if a tick sees
// it: as it ends, by the kernel side, into a map by thread (TickKernelStacks), or, still
// open when the sampler reads the tick, by the sampler's ask (AskKernelStacks). An episode
// that begins and ends between two ticks, which no row shows, costs no walk.

// KernelStackAsk is one thread whose kernel stack the sampler asks for, and the answer:
// Nr frames in Ips, innermost first (0 when the thread is gone or its tid was reused).
type KernelStackAsk = kstackaskTcKstackAsk

// kstackAsker owns the program that walks the kernel stacks of threads still waiting
// (kstackask.bpf.c), and the states whose stacks are deferred.
type kstackAsker struct {
	states []state.State
	*askIterator[KernelStackAsk]
	// tids and ended are TickKernelStacks' batch buffers, kept from tick to tick.
	tids  []uint32
	ended []threadcapTcTickKstack
}

// canDeferStacks reports whether the kernel has what the ask program needs.
func canDeferStacks() (bool, error) {
	return kernelHas(kfuncHas("bpf_task_from_pid"))
}

// openKstackAsker loads the ask program and makes its link. On error nothing stays loaded.
func openKstackAsker(states []state.State) (*kstackAsker, error) {
	spec, err := loadKstackask()
	if err != nil {
		return nil, err
	}
	it, err := openAskIterator[KernelStackAsk](spec, "the kernel stack walker")
	if err != nil {
		return nil, err
	}
	return &kstackAsker{states: states, askIterator: it}, nil
}

// close frees the program; it may be called on a nil kstackAsker.
func (a *kstackAsker) close() error {
	if a == nil {
		return nil
	}
	return a.askIterator.close()
}

// DeferredStacks is the states whose kernel stacks are walked only for the episodes a
// tick sees, nil when none are: the sampler takes them with TickKernelStacks and
// AskKernelStacks, and records hold none.
func (t *Tracker) DeferredStacks() []state.State {
	if t.kasks == nil {
		return nil
	}
	return t.kasks.states
}

// TickKernelStacks empties the map of stacks the kernel side walked as episodes ended,
// adding to into those of episodes that spanned tick, by thread id, innermost frame
// first. The others are of earlier ticks, which no row needs any more.
// They are read and deleted kstackBatch at a time, a syscall each.
func (t *Tracker) TickKernelStacks(tick uint64, into map[int32][]uint64) error {
	if t.kasks.tids == nil {
		t.kasks.tids, t.kasks.ended = make([]uint32, kstackBatch), make([]threadcapTcTickKstack, kstackBatch)
	}
	var cursor ebpf.MapBatchCursor
	for {
		n, err := t.coll.Maps[threadcapMapTickKstacks].BatchLookupAndDelete(&cursor, t.kasks.tids, t.kasks.ended, nil)
		for i := range n {
			if k := &t.kasks.ended[i]; k.TickNs == tick && k.Nr > 0 {
				into[int32(t.kasks.tids[i])] = append([]uint64(nil), k.Ips[:min(int(k.Nr), len(k.Ips))]...)
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the stacks walked at episodes' ends: %w", err)
		}
	}
}

// kstackBatch is how many stacks walked at episodes' ends one syscall takes.
const kstackBatch = 64

// AskKernelStacks walks the kernel stack of each thread asked, in place (see
// KernelStackAsk), in one run of a program per 1,024 asks.
func (t *Tracker) AskKernelStacks(asks []KernelStackAsk) error {
	if t.kasks == nil {
		return errors.New("kernel stacks are not deferred")
	}
	return t.kasks.run(asks)
}

// StackWalks is how many kernel stacks were walked for episodes a tick saw, since Open:
// as they ended and when asked.
func (t *Tracker) StackWalks() (uint64, error) {
	n, err := t.counter(threadcapTcCounterTC_STACK_WALKS)
	if err != nil || t.kasks == nil {
		return n, err
	}
	var asked uint64
	if err := t.kasks.coll.Variables[kstackaskVarWalks].Get(&asked); err != nil {
		return n, fmt.Errorf("reading the stacks walked when asked: %w", err)
	}
	return n + asked, nil
}
