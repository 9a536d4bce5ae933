// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/threadcap/threadcap/state"
)

// Record is one thread's record exactly as the kernel lays it out (struct record).
type Record = threadcapRecord

// recordArray is the records map seen in place through mmap: reading a record is a memory
// copy, not a syscall, whatever the number of threads. Only the slots handed out so far
// are mapped (see cover): a mapping is resident as a whole, and the array is sized for
// the most threads the machine may ever run (24 MiB at the default capacity).
type recordArray struct {
	m *ebpf.Map
	// mu is held for reading while recs is read (Scan may run on several goroutines),
	// and for writing while cover remaps it.
	mu   sync.RWMutex
	mem  []byte
	recs []Record // the mapped slots
}

// minMapped is the fewest slots mapped: a small machine's threads, mapped once.
const minMapped = 1024

func mapRecords(m *ebpf.Map) (*recordArray, error) {
	if int(m.ValueSize()) != int(unsafe.Sizeof(Record{})) {
		return nil, fmt.Errorf("record is %d bytes in the kernel object but %d in Go",
			m.ValueSize(), unsafe.Sizeof(Record{}))
	}
	a := &recordArray{m: m}
	return a, a.cover(minMapped)
}

// cover maps at least the first n slots (up to the array's capacity), doubling the
// mapping as threads are added, so that it grows a few times in a run, not every tick.
func (a *recordArray) cover(n uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	capacity := a.m.MaxEntries()
	if int(min(n, capacity)) <= len(a.recs) {
		return nil
	}
	want := uint32(minMapped)
	for want < n {
		want *= 2
	}
	want = min(want, capacity)
	mem, err := syscall.Mmap(a.m.FD(), 0, int(want)*int(unsafe.Sizeof(Record{})),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping %d records: %w", want, err)
	}
	if err := a.unmapLocked(); err != nil {
		_ = syscall.Munmap(mem)
		return err
	}
	a.mem, a.recs = mem, unsafe.Slice((*Record)(unsafe.Pointer(&mem[0])), want)
	return nil
}

// mapped is the number of slots mapped.
func (a *recordArray) mapped() uint32 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return uint32(len(a.recs))
}

func (a *recordArray) unmap() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unmapLocked()
}

func (a *recordArray) unmapLocked() error {
	if a.mem == nil {
		return nil
	}
	err := syscall.Munmap(a.mem)
	a.mem, a.recs = nil, nil
	return err
}

// A kernel write takes well under a microsecond, so a copy is retried at once a few
// times; then, in case the writer was interrupted (or shares its CPU with this reader),
// yielding the CPU between tries, for at most tornBudget of wall time. The budget is
// time, not a count of sleeps: Go's 20 µs sleeps took 1.2 ms each on the test machines,
// which made a budget of 50 of them cost 60 ms a torn record. A write interrupted by
// the softirqs that run at an interrupt's exit can last milliseconds on a loaded machine:
// with 200 µs, an hour of soak beside a load of 14 read 6 records torn. A record still
// torn after the budget is skipped for this tick and counted (Counters.TornReads); one
// left claimed costs the budget once (see loadRecord).
const (
	fastTries  = 8
	tornBudget = 2 * time.Millisecond
)

// load copies record slot consistently: it retries while the kernel's seq says a write
// was in progress or happened during the copy. It returns the last seq seen with false.
func (a *recordArray) load(slot uint32, out *Record) (uint32, bool) {
	r := &a.recs[slot]
	var deadline time.Time
	for try := 0; ; try++ {
		seq := atomic.LoadUint32(&r.Seq)
		if seq&1 == 0 {
			*out = *r
			loadFence()
			if atomic.LoadUint32(&r.Seq) == seq {
				return seq, true
			}
		}
		if try < fastTries {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(tornBudget)
		} else if time.Now().After(deadline) {
			return seq, false
		}
		runtime.Gosched()
	}
}

// seqGen is one generation of a record's seq (TC_SEQ_GEN in seqclaim.h): the bits below
// it are the write-in-progress bit and the CPU writing.
const seqGen = 1 << (13 + 1)

// release ends a claim that was never released, as the claimant would have: the next
// generation, even. It reports false when seq is no longer odd (the write ended).
func (a *recordArray) release(slot, odd uint32) bool {
	return atomic.CompareAndSwapUint32(&a.recs[slot].Seq, odd, odd&^(seqGen-1)+seqGen)
}

// quiet reports whether record slot holds a thread that has been asleep or stopped since
// before since, so that nothing in it can have changed: the scan skips such records
// without copying them.
func (a *recordArray) quiet(slot uint32, since uint64) bool {
	r := &a.recs[slot]
	seq := atomic.LoadUint32(&r.Seq)
	st, at, tid := state.State(r.Live.State), r.Live.SinceNs, r.Tid
	loadFence()
	if seq&1 != 0 || atomic.LoadUint32(&r.Seq) != seq || tid == 0 {
		return false
	}
	return (st == state.Sleeping || st == state.Stopped) && at < since
}

// Thread converts a record to the model the sampler works with, as the thread was at the
// tick: the view the kernel side kept for that tick if the record has moved since, the
// live one if not. tick 0 takes the live view.
func (r *Record) Thread(t *state.Thread, tick uint64) {
	v := &r.Live
	if tick != 0 && r.TickNs == tick {
		v = &r.AtTick
	}
	*t = state.Thread{
		Tid:            int32(r.Tid),
		Pid:            int32(r.Tgid),
		Comm:           r.Comm,
		State:          state.State(v.State),
		PrevState:      state.State(v.PrevState),
		CPU:            int32(v.Cpu),
		SinceNs:        v.SinceNs,
		StateNs:        v.StateNs,
		CPUNs:          v.CpuNs,
		CPUSyncNs:      v.CpuAtNs,
		Voluntary:      uint64(v.Nvcsw),
		Involuntary:    uint64(v.Nivcsw),
		Syscall:        v.ScNr,
		SyscallNs:      v.ScEnterNs,
		SyscallOnCPUNs: v.ScOnCpuNs,
		Args:           v.ScArgs,
		LastSyscall:    v.LastScNr,
		LastRet:        v.LastScRet,
		StartNs:        r.StartNs,
		ExecGen:        uint32(r.ExecGen),
		CgroupID:       r.CgroupId,
		KernelStack:    v.Kstack,
		UserStack:      v.Ustack,
		TickStacks:     v == &r.AtTick && r.StacksAtTick != 0,
		SplitEstimated: r.SplitEstimated != 0,
	}
}

// Slots is the number of slots ever handed out and mapped: every record lives below it.
// A mapping that cannot grow leaves the slots above it unread and is counted as torn.
func (t *Tracker) Slots() uint32 {
	var used uint64
	if err := t.coll.Variables[threadcapVarSlotsUsed].Get(&used); err != nil {
		used = uint64(t.Capacity())
	}
	n := uint32(min(used, uint64(t.Capacity())))
	if err := t.records.cover(n); err != nil {
		t.torn.Add(uint64(n - min(n, t.records.mapped())))
	}
	return min(n, t.records.mapped())
}

// Scan calls fn with every tracked thread as it was at tick (see SetTick), except those
// that have slept (or been stopped) since before since, a CLOCK_MONOTONIC time: nothing
// about them changed. since 0 scans all; keep, when not nil, names threads scanned even
// when quiet. A thread that had exited by the tick comes in state.Dead; the caller gives
// its slot back with Free after using it. fn must not keep th.
func (t *Tracker) Scan(since, tick uint64, keep func(tid int32) bool, fn func(slot uint32, th *state.Thread)) {
	var rec Record
	var th state.Thread
	n := t.Slots()
	t.records.mu.RLock()
	defer t.records.mu.RUnlock()
	read := func(slot uint32) {
		if !t.loadRecord(slot, &rec) || rec.Tid == 0 {
			return
		}
		rec.Thread(&th, tick)
		fn(slot, &th)
	}
	// The hook-free mode's pass lists the records it did not leave quiet since before
	// the tick of the pass before it (Iterate): for that since, those and no more are
	// the ones to read.
	if t.iter != nil && since != 0 && since == t.iter.listSince && keep == nil {
		for _, slot := range t.iter.toRead {
			if slot < n {
				read(slot)
			}
		}
		return
	}
	for slot := range n {
		if since != 0 && t.records.quiet(slot, since) &&
			(keep == nil || !keep(int32(atomic.LoadUint32(&t.records.recs[slot].Tid)))) {
			continue
		}
		read(slot)
	}
}

// loadRecord loads slot for Scan. A record found torn is counted, and remembered with
// the seq it was torn at: no write lasts from one tick to the next, so a record found at
// the next tick still claimed with that same seq was left claimed by a writer that never
// released it. That is a defect of the kernel side's claims (seqclaim.h), which no known
// interleaving produces; rather than lose the thread for the rest of its life and pay the
// retry budget at every tick, its claim is released and the record read again, once per
// claim, and counted (Counters.RecoveredRecords).
func (t *Tracker) loadRecord(slot uint32, rec *Record) bool {
	seq, ok := t.records.load(slot, rec)
	if ok && t.nstuck.Load() == 0 {
		return true
	}
	t.stuckMu.Lock()
	defer t.stuckMu.Unlock()
	defer func() { t.nstuck.Store(int32(len(t.stuck))) }()
	if ok {
		delete(t.stuck, slot)
		return true
	}
	if seq&1 != 0 && t.stuck[slot] == seq && t.records.release(slot, seq) {
		delete(t.stuck, slot)
		t.recovered.Add(1)
		if _, ok = t.records.load(slot, rec); ok {
			return true
		}
	}
	t.torn.Add(1)
	if seq&1 != 0 {
		t.stuck[slot] = seq
	}
	return false
}

// SetTick tells the kernel side the instant (CLOCK_MONOTONIC ns) of the next tick, before
// it comes: the first write to each record at or after it keeps the record's view as of
// that instant, which Scan with the same tick returns however late it runs.
func (t *Tracker) SetTick(mono uint64) {
	// A write to the memory-mapped .bss: one aligned 8-byte store, which the programs
	// never see torn. It cannot fail once loaded (the variable is there, and writable).
	_ = t.coll.Variables[threadcapVarTickNs].Set(mono)
	if t.io != nil {
		_ = t.io.Variables[ioVarTickNs].Set(mono)
	}
}

// TornReads counts records Scan skipped because the kernel side kept rewriting them
// while they were read, or because the mapping could not grow to them, and copies of
// open spans taken while a probe wrote them: a defect (see Counters.TornReads).
func (t *Tracker) TornReads() uint64 { return t.torn.Load() }

// RecoveredRecords counts records found claimed by the same write at two ticks in a row,
// whose claim was released (see loadRecord).
func (t *Tracker) RecoveredRecords() uint64 { return t.recovered.Load() }

// Free gives the slot of an exited thread back to the kernel side, for a new thread.
// Only slots Scan reported in state.Dead may be freed: the kernel never writes them again.
func (t *Tracker) Free(slot uint32) error {
	t.records.mu.RLock()
	defer t.records.mu.RUnlock()
	r := &t.records.recs[slot]
	if state.State(r.Live.State) != state.Dead || r.Tid == 0 {
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
	// UnseenSwitches counts threads found to have left a CPU without a sched_switch event,
	// whose records were repaired from the kernel's own CPU time of the thread.
	UnseenSwitches uint64
	// WriteConflicts counts a thread's own events the kernel side could not write: its
	// record stayed claimed by another writer longer than a write takes, or by a write
	// the event interrupted. The record misses that change until its next event.
	WriteConflicts uint64
	// TornReads counts records (and open spans) user space skipped for a tick because
	// they were being written every time it tried to copy them within its budget; and
	// RecoveredRecords the records found claimed by the same write at two ticks in a row,
	// whose claim was released (see Tracker.loadRecord). Both are defects: no write lasts
	// that long. Neither is a kernel counter.
	TornReads, RecoveredRecords uint64
}

// Counters sums the per-CPU counters.
func (t *Tracker) Counters() (Counters, error) {
	read := t.counter
	var c Counters
	var err error
	if c.LostUpdates, err = read(threadcapTcCounterTC_LOST_UPDATES); err != nil {
		return c, err
	}
	if c.UntrackedThreads, err = read(threadcapTcCounterTC_UNTRACKED_THREADS); err != nil {
		return c, err
	}
	if c.LostStacks, err = read(threadcapTcCounterTC_LOST_STACKS); err != nil {
		return c, err
	}
	if c.UnseenSwitches, err = read(threadcapTcCounterTC_UNSEEN_SWITCHES); err != nil {
		return c, err
	}
	c.TornReads, c.RecoveredRecords = t.torn.Load(), t.recovered.Load()
	c.WriteConflicts, err = read(threadcapTcCounterTC_WRITE_CONFLICTS)
	return c, err
}

// counter sums one of the per-CPU counters.
func (t *Tracker) counter(which threadcapTcCounter) (uint64, error) {
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
