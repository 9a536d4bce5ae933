// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/threadcap/threadcap/state"
)

// Record is one thread's record exactly as the kernel lays it out (struct record).
type Record = threadcapRecord

// recordArray is the records map seen in place through mmap: reading a record is a memory
// copy, not a syscall, whatever the number of threads.
type recordArray struct {
	mem  []byte
	recs []Record
}

func mapRecords(m *ebpf.Map) (*recordArray, error) {
	n := int(m.MaxEntries())
	size := n * int(unsafe.Sizeof(Record{}))
	if int(m.ValueSize()) != int(unsafe.Sizeof(Record{})) {
		return nil, fmt.Errorf("record is %d bytes in the kernel object but %d in Go",
			m.ValueSize(), unsafe.Sizeof(Record{}))
	}
	mem, err := syscall.Mmap(m.FD(), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the records: %w", err)
	}
	recs := unsafe.Slice((*Record)(unsafe.Pointer(&mem[0])), n)
	return &recordArray{mem: mem, recs: recs}, nil
}

func (a *recordArray) unmap() error {
	return syscall.Munmap(a.mem)
}

// maxTries bounds how often a record being rewritten is read again. A kernel write takes
// well under a microsecond, so a record still torn after this many copies is skipped for
// one tick rather than spun on.
const maxTries = 8

// load copies record slot consistently: it retries while the kernel's seq says a write
// was in progress or happened during the copy.
func (a *recordArray) load(slot uint32, out *Record) bool {
	r := &a.recs[slot]
	for range maxTries {
		seq := atomic.LoadUint32(&r.Seq)
		if seq&1 != 0 {
			continue
		}
		*out = *r
		loadFence()
		if atomic.LoadUint32(&r.Seq) == seq {
			return true
		}
	}
	return false
}

// quiet reports whether record slot holds a thread that has been asleep or stopped since
// before since, so that nothing in it can have changed: the scan skips such records
// without copying them.
func (a *recordArray) quiet(slot uint32, since uint64) bool {
	r := &a.recs[slot]
	seq := atomic.LoadUint32(&r.Seq)
	st, at, tid := state.State(r.State), r.SinceNs, r.Tid
	loadFence()
	if seq&1 != 0 || atomic.LoadUint32(&r.Seq) != seq || tid == 0 {
		return false
	}
	return (st == state.Sleeping || st == state.Stopped) && at < since
}

// Thread converts a record to the model the sampler works with.
func (r *Record) Thread(t *state.Thread) {
	*t = state.Thread{
		Tid:            int32(r.Tid),
		Pid:            int32(r.Tgid),
		Comm:           r.Comm,
		State:          state.State(r.State),
		PrevState:      state.State(r.PrevState),
		CPU:            int32(r.Cpu),
		SinceNs:        r.SinceNs,
		StateNs:        r.StateNs,
		Voluntary:      uint64(r.Nvcsw),
		Involuntary:    uint64(r.Nivcsw),
		Syscall:        r.ScNr,
		SyscallNs:      r.ScEnterNs,
		SyscallOnCPUNs: r.ScOnCpuNs,
		Args:           r.ScArgs,
		LastSyscall:    r.LastScNr,
		LastRet:        r.LastScRet,
		StartNs:        r.StartNs,
		ExecGen:        r.ExecGen,
		CgroupID:       r.CgroupId,
		KernelStack:    r.Kstack,
		UserStack:      r.Ustack,
	}
}

// Slots is the number of slots ever handed out: every record lives below it.
func (t *Tracker) Slots() uint32 {
	var used uint64
	if err := t.coll.Variables[threadcapVarSlotsUsed].Get(&used); err != nil {
		return t.Capacity()
	}
	return uint32(min(used, uint64(t.Capacity())))
}

// Scan calls fn with every tracked thread, except those that have slept (or been stopped)
// since before since, a CLOCK_MONOTONIC time: nothing about them changed. since 0 scans
// all. A record of an exited thread (state.Dead) is passed once it is final; the caller
// gives its slot back with Free after using it. fn must not keep th.
func (t *Tracker) Scan(since uint64, fn func(slot uint32, th *state.Thread)) {
	var rec Record
	var th state.Thread
	n := t.Slots()
	for slot := range n {
		if since != 0 && t.records.quiet(slot, since) {
			continue
		}
		if !t.records.load(slot, &rec) || rec.Tid == 0 {
			continue
		}
		rec.Thread(&th)
		fn(slot, &th)
	}
}

// Free gives the slot of an exited thread back to the kernel side, for a new thread.
// Only slots Scan reported in state.Dead may be freed: the kernel never writes them again.
func (t *Tracker) Free(slot uint32) error {
	r := &t.records.recs[slot]
	if state.State(r.State) != state.Dead || r.Tid == 0 {
		return fmt.Errorf("slot %d does not hold an exited thread", slot)
	}
	atomic.StoreUint32(&r.Tid, 0)
	if err := t.coll.Maps[threadcapMapFreeSlots].Update(nil, slot, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("freeing slot %d: %w", slot, err)
	}
	return nil
}

// Counters are the kernel side's own losses, cumulative since Open.
type Counters struct {
	// LostUpdates counts events about threads that had no record (the array was full).
	LostUpdates uint64
	// UntrackedThreads counts threads refused a record because the array was full.
	UntrackedThreads uint64
	// LostStacks counts stacks not captured because their bucket in the stack map held
	// another stack.
	LostStacks uint64
}

// Counters sums the per-CPU counters.
func (t *Tracker) Counters() (Counters, error) {
	read := func(which threadcapTcCounter) (uint64, error) {
		var perCPU []uint64
		if err := t.coll.Maps[threadcapMapCounters].Lookup(which, &perCPU); err != nil {
			return 0, fmt.Errorf("reading counter %d: %w", which, err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		return sum, nil
	}
	var c Counters
	var err error
	if c.LostUpdates, err = read(threadcapTcCounterTC_LOST_UPDATES); err != nil {
		return c, err
	}
	if c.UntrackedThreads, err = read(threadcapTcCounterTC_UNTRACKED_THREADS); err != nil {
		return c, err
	}
	c.LostStacks, err = read(threadcapTcCounterTC_LOST_STACKS)
	return c, err
}
