// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// taskIter is the hook-free mode's kernel side (taskiter.bpf.c): a task iterator that,
// run once per tick, writes every thread's record in the tracker's records array.
type taskIter struct {
	coll *ebpf.Collection
	link *link.Iter
	// list is to_read, mapped: the slots the last pass has the sampler read (see
	// taskiter.bpf.c's read_at_tick), all but those quiet since before listSince, the
	// pass before's tick; toRead holds them after run, raw their bytes.
	list      *ebpf.Memory
	raw       []byte
	toRead    []uint32
	listSince uint64
}

// openTaskIter loads the iterator over the maps of the tracker's collection shared (the
// records, the slots free and in use, the counters) and makes its link, ready to run.
// Where the kernel has the open-coded task iterator (bpf_iter_task_new, Linux 6.7) the
// pass is one call that walks the threads (walk_tasks); before, one call per task.
func openTaskIter(shared *ebpf.Collection, capacity uint32) (*taskIter, error) {
	walk, err := kernelHas(kfuncHas("bpf_iter_task_new"))
	if err != nil {
		return nil, err
	}
	if walk && !perTaskPass {
		ti, err := loadTaskIter(shared, capacity, taskiterProgWalkTasks)
		if err == nil {
			return ti, nil
		}
		// Linux 6.7 has the iterator but not the trusted argument of visit_task (6.8).
	}
	return loadTaskIter(shared, capacity, taskiterProgReadTasks)
}

// SchedstatsOn reports whether the kernel keeps each thread's sleep and D times
// (kernel.sched_schedstats is 1): the hook-free mode, loaded then, splits the time off CPU
// by them (taskiter.bpf.c's split_off_cpu). false on a kernel without them.
func SchedstatsOn() bool {
	b, err := os.ReadFile("/proc/sys/kernel/sched_schedstats")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// perTaskPass has openTaskIter load read_tasks whatever the kernel, for tests.
var perTaskPass bool

// loadTaskIter loads the pass prog, walk_tasks or read_tasks, and makes its link.
func loadTaskIter(shared *ebpf.Collection, capacity uint32, prog string) (ti *taskIter, err error) {
	spec, err := loadTaskiter()
	if err != nil {
		return nil, err
	}
	for name := range spec.Programs {
		if name != prog {
			delete(spec.Programs, name)
		}
	}
	spec.Maps[taskiterMapRecords].MaxEntries = capacity
	spec.Maps[taskiterMapFreeSlots].MaxEntries = capacity
	spec.Maps[taskiterMapSeenAt].MaxEntries = capacity
	spec.Maps[taskiterMapQuietAt].MaxEntries = capacity
	spec.Maps[taskiterMapToRead].MaxEntries = capacity
	if err := spec.Variables[taskiterVarCapacity].Set(capacity); err != nil {
		return nil, fmt.Errorf("setting capacity: %w", err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("counting the possible CPUs: %w", err)
	}
	spec.Maps[taskiterMapCpus].MaxEntries = uint32(cpus)
	spec.Maps[taskiterMapOnCpuAtPass].MaxEntries = uint32(cpus)
	if err := spec.Variables[taskiterVarNrCpus].Set(uint32(cpus)); err != nil {
		return nil, fmt.Errorf("setting the CPUs: %w", err)
	}
	if SchedstatsOn() {
		if err := spec.Variables[taskiterVarSchedstats].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("setting schedstats: %w", err)
		}
	}
	replace := map[string]*ebpf.Map{}
	for _, name := range []string{taskiterMapRecords, taskiterMapFreeSlots, taskiterMapTaskSlots, taskiterMapCounters} {
		replace[name] = shared.Maps[name]
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: replace})
	if err != nil {
		return nil, explain(fmt.Errorf("loading the task iterator: %w", err))
	}
	ti = &taskIter{coll: coll}
	defer func() {
		if err != nil {
			ti.close()
			ti = nil
		}
	}()
	opts := link.IterOptions{Program: coll.Programs[prog]}
	if prog == taskiterProgWalkTasks {
		opts.Map = coll.Maps[taskiterMapOnePass]
	}
	if ti.link, err = link.AttachIter(opts); err != nil {
		return nil, explain(fmt.Errorf("making the task iterator: %w", err))
	}
	return ti, nil
}

// run walks every task once, for the tick mono, and returns the slots handed out so far
// and how long the pass took. The iterator writes nothing to read: reading to the end
// runs it, in this thread, on this CPU, one task after another.
func (ti *taskIter) run(mono uint64) (used uint64, pass time.Duration, err error) {
	if err := ti.coll.Variables[taskiterVarTickNs].Set(mono); err != nil {
		return 0, 0, fmt.Errorf("setting the tick: %w", err)
	}
	if err := ti.coll.Variables[taskiterVarPrevTickNs].Get(&ti.listSince); err != nil {
		return 0, 0, fmt.Errorf("reading the previous tick: %w", err)
	}
	rd, err := ti.link.Open()
	if err != nil {
		return 0, 0, fmt.Errorf("starting the task iterator: %w", err)
	}
	// A read that returns nothing is not always the end: the kernel may stop a read
	// early (its seq_file logic), and only the program's last call, after the last task,
	// marks the tick done. So reads go on until it has, a bounded number of times.
	var reads int
	for reads = 1; ; reads++ {
		_, err = io.Copy(io.Discard, rd)
		if err != nil || ti.done(mono) || reads == maxIterReads {
			break
		}
	}
	err = errors.Join(err, rd.Close())
	if err != nil {
		return 0, 0, fmt.Errorf("running the task iterator: %w", err)
	}
	if !ti.done(mono) {
		return 0, 0, fmt.Errorf("the task iterator did not reach its end in %d reads", reads)
	}
	if err := ti.coll.Variables[taskiterVarSlotsUsed].Get(&used); err != nil {
		return 0, 0, fmt.Errorf("reading the slots used: %w", err)
	}
	var ns uint64
	if err := ti.coll.Variables[taskiterVarPassNs].Get(&ns); err != nil {
		return 0, 0, fmt.Errorf("reading the pass's length: %w", err)
	}
	return used, time.Duration(ns), ti.readList()
}

// readList copies the slots the pass listed into toRead.
func (ti *taskIter) readList() error {
	var n uint64
	if err := ti.coll.Variables[taskiterVarToReadN].Get(&n); err != nil {
		return fmt.Errorf("reading how many records to read: %w", err)
	}
	if ti.list == nil {
		list, err := ti.coll.Maps[taskiterMapToRead].Memory()
		if err != nil {
			return fmt.Errorf("mapping the records to read: %w", err)
		}
		ti.list = list
	}
	n = min(n, uint64(ti.list.Size()/8))
	ti.raw = append(ti.raw[:0], make([]byte, 8*n)...)
	if _, err := ti.list.ReadAt(ti.raw, 0); err != nil {
		return fmt.Errorf("reading the records to read: %w", err)
	}
	ti.toRead = ti.toRead[:0]
	for i := range n {
		ti.toRead = append(ti.toRead, uint32(binary.NativeEndian.Uint64(ti.raw[8*i:])))
	}
	return nil
}

// maxIterReads bounds the reads of one iteration: each read goes on from where the
// last stopped, so only a kernel that never ends one would take them all.
const maxIterReads = 1000

// done reports whether the iteration for the tick mono has been through every task.
func (ti *taskIter) done(mono uint64) bool {
	var prev uint64
	return ti.coll.Variables[taskiterVarPrevTickNs].Get(&prev) == nil && prev == mono
}

func (ti *taskIter) close() error {
	if ti == nil {
		return nil
	}
	var err error
	if ti.link != nil {
		err = ti.link.Close()
	}
	ti.coll.Close()
	return err
}

// Iterate brings every record up to the tick mono, in the hook-free mode (SyscallsTick),
// where nothing else writes them: the sampler calls it at each tick, before Scan. It
// returns how long the pass over the threads took, from the instant it read which thread
// each CPU was running to its end: the span over which it read the threads' states and
// counts. In the other modes the hooks keep the records current and it does nothing.
func (t *Tracker) Iterate(mono uint64) (time.Duration, error) {
	if t.iter == nil {
		return 0, nil
	}
	used, pass, err := t.iter.run(mono)
	if err != nil {
		return 0, err
	}
	// Slots reads the high-water mark from the tracker's object, where the hooks keep it.
	return pass, t.coll.Variables[threadcapVarSlotsUsed].Set(used)
}

// HookFree reports whether the records are written by Iterate alone (SyscallsTick).
func (t *Tracker) HookFree() bool { return t.iter != nil }

// hookFree drops every hook program of the tracker's object: in the hook-free mode only
// its maps are loaded, which the iterator writes and the sampler reads, and with spans the
// span probes' program, which reads the kernel's own counts of the thread (threadcap.bpf.c's
// hook_free; with schedstats, its sleeps too), and the one that forgets a thread's spans
// at its exit (on_exit_spans).
func hookFree(spec *ebpf.CollectionSpec) error {
	for name, p := range spec.Programs {
		if p.Type == ebpf.Tracing && name != threadcapProgOnExitSpans {
			delete(spec.Programs, name)
		}
	}
	if err := spec.Variables[threadcapVarHookFree].Set(uint8(1)); err != nil {
		return fmt.Errorf("setting the hook-free mode: %w", err)
	}
	if SchedstatsOn() {
		if err := spec.Variables[threadcapVarSchedstats].Set(uint8(1)); err != nil {
			return fmt.Errorf("setting schedstats: %w", err)
		}
	}
	return nil
}
