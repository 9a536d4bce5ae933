// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/state"
)

// SyscallMode says how the syscall a thread is in gets recorded.
type SyscallMode string

const (
	// SyscallsFull hooks raw_syscalls sys_enter/sys_exit: exact syscall, arguments and
	// entry time, for every syscall.
	SyscallsFull SyscallMode = "full"
	// SyscallsPassive adds no syscall hooks: a thread's syscall and arguments are read from
	// its saved registers when it leaves the CPU, so the syscall path costs nothing.
	SyscallsPassive SyscallMode = "passive"
	// SyscallsTick attaches no program to any scheduler, syscall, timer or idle hook: at
	// each tick a task iterator reads every thread, its state, its syscall from its saved
	// registers and the kernel's own counters of its times (taskiter.bpf.c).
	SyscallsTick SyscallMode = "tick"
)

// ParseSyscallMode accepts "full", "passive" or "tick".
func ParseSyscallMode(s string) (SyscallMode, error) {
	switch m := SyscallMode(s); m {
	case SyscallsFull, SyscallsPassive, SyscallsTick:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a mode: use %s, %s or %s", s, SyscallsFull, SyscallsPassive, SyscallsTick)
}

// DefaultCapacity is how many threads are tracked at once unless configured otherwise.
const DefaultCapacity = 65536

// Config is what the kernel side is loaded with.
type Config struct {
	// Capacity is the number of threads tracked at once (records of exited threads count
	// until the sampler has read them). Each costs one 384-byte record (two views of the thread: live and at the tick).
	Capacity uint32
	Syscalls SyscallMode
	// Stacks says at which switch-outs stacks are captured; StacksUninterruptible when "".
	Stacks StackMode
	// UserStacks captures the user-space stack (a frame-pointer walk) along with the
	// kernel one. Off by default: a walk per capture, and frames are only as good as the
	// program's frame pointers.
	UserStacks bool
	// StackEntries is how many distinct stacks the stack map holds (DefaultStackEntries
	// when 0, at most MaxStackEntries); a stack that finds its bucket taken is counted lost.
	StackEntries uint32
	// IO tracks block requests (io.bpf.c): which thread submitted each, to which disk, and
	// its queue and device times.
	IO bool
	// Spans are the probe sites of spans (spans.go); none loads no probe program.
	Spans []SpanProbe
	// SpanThreads is how many threads can have spans open at once (DefaultSpanThreads
	// when 0).
	SpanThreads uint32
}

// BTFPath is where the kernel publishes its type information; threadcap needs it.
const BTFPath = "/sys/kernel/btf/vmlinux"

// ErrNoBTF means the kernel has no BTF, without which tp_btf programs cannot load.
var ErrNoBTF = errors.New("kernel BTF not found at " + BTFPath +
	": threadcap needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (" + MinKernel + " or newer)")

// Tracker owns threadcap's kernel side: the loaded objects, the attached links and the
// memory-mapped records.
type Tracker struct {
	coll *ebpf.Collection
	io   *ebpf.Collection // nil when Config.IO is off
	iter *taskIter        // the hook-free mode's iterator; nil in the other modes
	// kasks walks the kernel stacks of episodes still open at a tick's read; nil unless
	// stacks are deferred (see kstacks.go).
	kasks *kstackAsker
	// stackStates are the states whose stacks the kernel side captures: none in the
	// hook-free mode, which has no switch to capture them at.
	stackStates []state.State
	// ioKeys, ioDone and ioVals are InFlight's batch buffers, kept from tick to tick.
	ioKeys []uint64
	ioDone []ioTcIoDoneKey
	ioVals []ioTcIo
	// ioEmptyAt is the kernel side's io_added when InFlight last found no request in
	// either map; ioEmpty says whether it did.
	ioEmptyAt uint64
	ioEmpty   bool
	// spanKeys and spanVals are SpanThreads' batch buffers, likewise.
	spanKeys []uint32
	spanVals []threadcapTcSpanThread
	// spanFirst and spanSecond are SpanThreads' two reads.
	spanFirst, spanSecond []spanEntry
	links                 []link.Link
	records               *recordArray
	torn                  atomic.Uint64 // see TornReads
	spans                 int           // span probe sites attached
	// stuck is, by slot, the odd seq a record was last found torn at (see loadRecord);
	// recovered counts the claims released.
	stuckMu   sync.Mutex
	stuck     map[uint32]uint32
	nstuck    atomic.Int32 // len(stuck), read without the lock
	recovered atomic.Uint64
}

// Open loads the programs, sizes the maps and attaches every hook. On error nothing stays
// loaded or attached.
func Open(cfg Config) (t *Tracker, err error) {
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.Syscalls == "" {
		cfg.Syscalls = SyscallsFull
	}
	if cfg.Stacks == "" {
		cfg.Stacks = StacksUninterruptible
	}
	if _, err := os.Stat(BTFPath); err != nil {
		return nil, ErrNoBTF
	}
	missing, err := Missing(cfg.Syscalls)
	if err != nil {
		return nil, err
	}
	if required := Required(missing); len(required) > 0 {
		return nil, missingError(required)
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK; newer ones ignore it.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, explain(fmt.Errorf("raising the memlock limit: %w", err))
	}
	spec, err := loadThreadcap()
	if err != nil {
		return nil, err
	}
	var kasks *kstackAsker
	if deferStacks(cfg) {
		ok, err := canDeferStacks()
		if err != nil {
			return nil, err
		}
		if ok {
			if kasks, err = openKstackAsker(cfg.Stacks.States()); err != nil {
				return nil, err
			}
		}
	}
	if err := configure(spec, cfg, kasks != nil); err != nil {
		kasks.close()
		return nil, err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		kasks.close()
		return nil, explain(fmt.Errorf("loading bpf objects: %w", err))
	}
	t = &Tracker{coll: coll, kasks: kasks, stuck: map[uint32]uint32{}}
	defer func() {
		if err != nil {
			t.Close()
			t = nil
		}
	}()
	if t.records, err = mapRecords(coll.Maps[threadcapMapRecords]); err != nil {
		return nil, err
	}
	if err := t.attach(coll); err != nil {
		return nil, err
	}
	if cfg.Syscalls == SyscallsTick {
		if t.iter, err = openTaskIter(coll, cfg.Capacity); err != nil {
			return nil, err
		}
	} else {
		t.stackStates = cfg.Stacks.States()
	}
	if cfg.IO {
		if t.io, err = loadIO(); err != nil {
			return nil, err
		}
		if err := t.attach(t.io); err != nil {
			return nil, err
		}
	}
	if err := t.attachSpans(cfg.Spans); err != nil {
		return nil, err
	}
	return t, nil
}

// StackStates are the states at whose switch-outs the tracker captures a thread's kernel
// stack: the rows that should carry one are those off CPU in one of them. None in the
// hook-free mode (README).
func (t *Tracker) StackStates() []state.State { return t.stackStates }

// attach attaches every program of coll, each at the hook its name in SEC() gives.
func (t *Tracker) attach(coll *ebpf.Collection) error {
	for name, prog := range coll.Programs {
		if prog.Type() != ebpf.Tracing {
			continue // the span probe program, attached per site by attachSpans
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return explain(fmt.Errorf("attaching %s: %w", name, err))
		}
		t.links = append(t.links, l)
	}
	return nil
}

// configure sizes the maps, sets the constants and drops the programs the mode does
// not use, before anything reaches the kernel.
func configure(spec *ebpf.CollectionSpec, cfg Config, deferred bool) error {
	spec.Maps[threadcapMapRecords].MaxEntries = cfg.Capacity
	spec.Maps[threadcapMapFreeSlots].MaxEntries = cfg.Capacity
	if err := spec.Variables[threadcapVarCapacity].Set(cfg.Capacity); err != nil {
		return fmt.Errorf("setting capacity: %w", err)
	}
	passive := uint8(0)
	switch cfg.Syscalls {
	case SyscallsFull:
		delete(spec.Programs, threadcapProgOnExitSpans)
	case SyscallsPassive:
		passive = 1
		delete(spec.Programs, threadcapProgOnSysEnter)
		delete(spec.Programs, threadcapProgOnSysExit)
		delete(spec.Programs, threadcapProgOnExitSpans)
	case SyscallsTick:
		if err := hookFree(spec); err != nil {
			return err
		}
	default:
		_, err := ParseSyscallMode(string(cfg.Syscalls))
		return err
	}
	if err := spec.Variables[threadcapVarPassiveSyscalls].Set(passive); err != nil {
		return fmt.Errorf("setting syscall mode: %w", err)
	}
	if err := configureSpans(spec, cfg); err != nil {
		return err
	}
	return configureStacks(spec, cfg, deferred)
}

// explain adds what to do to the errors a user can fix, and the verifier's own words
// (its last lines say why) to a rejected program.
func explain(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		log := ve.Log
		if len(log) > 20 {
			log = log[len(log)-20:]
		}
		return fmt.Errorf("%w\nverifier log (last lines):\n%s", err, strings.Join(log, "\n"))
	}
	if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("%w: the kernel could not make the maps; lower capacity "+
			"(each thread's record takes 384 bytes) or stacks.entries", err)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: run threadcap as root, or grant it CAP_BPF and CAP_PERFMON "+
			"(see deploy/threadcap.service); where it has them, a seccomp filter refuses bpf(2), "+
			"as a container's does unless told (systemd-nspawn --system-call-filter=bpf)", err)
	}
	return err
}

// Capacity is how many threads the record array holds.
func (t *Tracker) Capacity() uint32 { return t.records.m.MaxEntries() }

// Close detaches every program and frees the maps. It may be called on a nil or partly
// opened Tracker, and returns every error met.
func (t *Tracker) Close() error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	errs = append(errs, t.iter.close(), t.kasks.close())
	t.iter, t.kasks = nil, nil
	if t.records != nil {
		errs = append(errs, t.records.unmap())
		t.records = nil
	}
	for _, coll := range []*ebpf.Collection{t.io, t.coll} {
		if coll != nil {
			coll.Close()
		}
	}
	t.io, t.coll = nil, nil
	return errors.Join(errs...)
}
