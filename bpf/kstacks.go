// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

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

// MaxKernelStackAsks is how many threads one run of the ask program walks.
const MaxKernelStackAsks = 1024

// kstackAsker owns the program that walks the kernel stacks of threads still waiting
// (kstackask.bpf.c), and its link: an iterator that, run once, answers a batch of asks.
type kstackAsker struct {
	states []state.State // the states whose stacks are deferred
	coll   *ebpf.Collection
	link   *link.Iter
	mem    []byte
	asks   []KernelStackAsk
	// tids and ended are TickKernelStacks' batch buffers, kept from tick to tick.
	tids  []uint32
	ended []threadcapTcTickKstack
}

// canDeferStacks reports whether the kernel has what the ask program needs.
func canDeferStacks() (bool, error) {
	return kernelHas(kfuncHas("bpf_task_from_pid"))
}

// openKstackAsker loads the ask program and makes its link. On error nothing stays loaded.
func openKstackAsker(states []state.State) (a *kstackAsker, err error) {
	spec, err := loadKstackask()
	if err != nil {
		return nil, err
	}
	spec.Maps[kstackaskMapKstackAsks].MaxEntries = MaxKernelStackAsks
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, explain(fmt.Errorf("loading the kernel stack walker: %w", err))
	}
	a = &kstackAsker{states: states, coll: coll}
	defer func() {
		if err != nil {
			a.close()
			a = nil
		}
	}()
	asks := coll.Maps[kstackaskMapKstackAsks]
	size := int(unsafe.Sizeof(KernelStackAsk{}))
	if int(asks.ValueSize()) != size {
		return nil, fmt.Errorf("a stack ask is %d bytes in the kernel object but %d in Go", asks.ValueSize(), size)
	}
	a.mem, err = syscall.Mmap(asks.FD(), 0, MaxKernelStackAsks*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the stack asks: %w", err)
	}
	a.asks = unsafe.Slice((*KernelStackAsk)(unsafe.Pointer(&a.mem[0])), MaxKernelStackAsks)
	a.link, err = link.AttachIter(link.IterOptions{
		Program: coll.Programs[kstackaskProgWalkAsks], Map: coll.Maps[kstackaskMapOneBatch],
	})
	if err != nil {
		return nil, explain(fmt.Errorf("making the kernel stack walker's iterator: %w", err))
	}
	return a, nil
}

func (a *kstackAsker) walk(asks []KernelStackAsk) error {
	for len(asks) > 0 {
		n := min(len(asks), MaxKernelStackAsks)
		copy(a.asks, asks[:n])
		if err := a.coll.Variables[kstackaskVarNrAsks].Set(uint32(n)); err != nil {
			return fmt.Errorf("setting the stack asks: %w", err)
		}
		rd, err := a.link.Open()
		if err != nil {
			return fmt.Errorf("starting the kernel stack walker: %w", err)
		}
		_, err = io.Copy(io.Discard, rd)
		if err = errors.Join(err, rd.Close()); err != nil {
			return fmt.Errorf("running the kernel stack walker: %w", err)
		}
		copy(asks[:n], a.asks)
		asks = asks[n:]
	}
	return nil
}

func (a *kstackAsker) close() error {
	if a == nil {
		return nil
	}
	var err error
	if a.link != nil {
		err = a.link.Close()
	}
	if a.mem != nil {
		err = errors.Join(err, syscall.Munmap(a.mem))
	}
	if a.coll != nil {
		a.coll.Close()
	}
	return err
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
// KernelStackAsk), in one run of a program per MaxKernelStackAsks.
func (t *Tracker) AskKernelStacks(asks []KernelStackAsk) error {
	if t.kasks == nil {
		return errors.New("kernel stacks are not deferred")
	}
	return t.kasks.walk(asks)
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
