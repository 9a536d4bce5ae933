// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// The profile rates allowed: a rate prime to the kernel's timer tick (49, 99) keeps the
// samples from beating with it; above 1000 Hz the program's cost stops being small.
const (
	MinProfileHz = 1
	MaxProfileHz = 1000
)

// CheckProfileHz accepts the profile rates allowed, and 0 (no profile).
func CheckProfileHz(hz int) error {
	if hz != 0 && (hz < MinProfileHz || hz > MaxProfileHz) {
		return fmt.Errorf("profile.hz %d is out of range: use %d to %d (49 or 99 are typical), or 0 for no profile",
			hz, MinProfileHz, MaxProfileHz)
	}
	return nil
}

// Sizes of a generation's maps (there are two of each). A minute's distinct stacks past
// profileStackEntries (or whose hash bucket another took) are counted without their stack
// (LostStacks); its distinct (thread, stacks) past profileCountEntries are not counted
// (LostSamples). Memory: about 3.3 MB a stack map, 1 MB a count map.
const (
	profileStackEntries = 8192
	profileCountEntries = 16384
)

// flipSettle is how long Take waits after switching generations before reading the old
// one: a program that read the old generation just before the switch is still counting
// into it, for microseconds (it runs in the perf event's interrupt).
const flipSettle = 20 * time.Millisecond

// Profile owns the CPU profile's kernel side: its object (profile.bpf.c), a software
// cpu-clock perf event per online CPU and the links that run the program from them.
type Profile struct {
	coll   *ebpf.Collection
	events []*os.File
	links  []link.Link
	hz     int
	gen    uint32
	// buffers of Take, kept from minute to minute
	keys []profileTcProfileKey
	vals []profileTcProfileCount
}

// ProfileCount is what one thread's samples with one pair of stacks added up to.
type ProfileCount struct {
	Pid, Tid        int32
	Process, Thread string
	// KernelStack and UserStack are ids in the ProfileStacks Take returns with the
	// counts; -1 when the sample had no such stack (user code has no kernel stack, a
	// kernel thread no user stack) or it was lost.
	KernelStack, UserStack int32
	// Span is the innermost span the thread had open, its id + 1; 0 for none (or no
	// spans shared: see OpenProfile).
	Span    uint16
	Samples uint64
}

// ProfileStacks are the frames of the stacks of one Take, innermost first, by id.
type ProfileStacks map[int32][]uint64

// OpenProfile loads the profile's program and starts sampling every online CPU hz times
// a second. With spans, a Tracker with span probes, samples are counted by the innermost
// span their thread had open too (the tracker's map of open spans is shared, read-only).
// On error nothing stays loaded or open.
func OpenProfile(hz int, spans *Tracker) (p *Profile, err error) {
	if err := CheckProfileHz(hz); err != nil {
		return nil, err
	}
	if hz == 0 {
		return nil, errors.New("profile.hz is 0: no profile to open")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, explain(fmt.Errorf("raising the memlock limit: %w", err))
	}
	spec, err := loadProfile()
	if err != nil {
		return nil, err
	}
	for _, m := range []string{profileMapProfileStacks0, profileMapProfileStacks1} {
		spec.Maps[m].MaxEntries = profileStackEntries
	}
	for _, m := range []string{profileMapProfileCounts0, profileMapProfileCounts1} {
		spec.Maps[m].MaxEntries = profileCountEntries
	}
	var opts ebpf.CollectionOptions
	if spans != nil && spans.spans > 0 {
		m := spans.coll.Maps[threadcapMapSpanThreads]
		spec.Maps[profileMapSpanThreads].MaxEntries = m.MaxEntries()
		opts.MapReplacements = map[string]*ebpf.Map{profileMapSpanThreads: m}
		if err := spec.Variables[profileVarSpansOn].Set(uint8(1)); err != nil {
			return nil, fmt.Errorf("setting the profile's spans: %w", err)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return nil, explain(fmt.Errorf("loading the profile's bpf objects: %w", err))
	}
	p = &Profile{coll: coll, hz: hz}
	defer func() {
		if err != nil {
			p.Close()
			p = nil
		}
	}()
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	prog := coll.Programs[profileProgOnProfileTick]
	for _, cpu := range cpus {
		ev, err := openCPUClock(cpu, hz)
		if err != nil {
			return nil, err
		}
		p.events = append(p.events, ev)
		l, err := link.AttachRawLink(link.RawLinkOptions{
			Target: int(ev.Fd()), Program: prog, Attach: ebpf.AttachPerfEvent,
		})
		if err != nil {
			return nil, explain(fmt.Errorf("attaching the profile program to CPU %d's perf event: %w", cpu, err))
		}
		p.links = append(p.links, l)
	}
	// Enabled once every CPU has its program, so that no CPU is sampled alone at first.
	for i, ev := range p.events {
		if err := unix.IoctlSetInt(int(ev.Fd()), unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return nil, fmt.Errorf("enabling the profile's perf event on CPU %d: %w", cpus[i], err)
		}
	}
	return p, nil
}

// openCPUClock opens a disabled software cpu-clock event on cpu, for every thread on it,
// overflowing hz times a second. The kernel turns a cpu-clock frequency into a fixed
// hrtimer period, so each sample stands for 1/hz s of CPU.
func openCPUClock(cpu, hz int) (*os.File, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample: uint64(hz),
		Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		err = fmt.Errorf("opening a cpu-clock perf event on CPU %d: %w", cpu, err)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("%w: run threadcap as root or grant it CAP_PERFMON "+
				"(kernel.perf_event_paranoid does not apply to it then)", err)
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), "perf_event:cpu-clock:"+strconv.Itoa(cpu)), nil
}

// onlineCPUs lists the CPUs online now. One brought online later is not profiled.
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("listing the online CPUs: %w", err)
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

// parseCPUList parses the kernel's CPU list format: "0-3,5,7-8".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("CPU list %q: bad range %q", s, part)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Hz is the profile's rate: each sample stands for 1/Hz s of CPU.
func (p *Profile) Hz() int { return p.hz }

// Take returns what was counted since the last Take (or since OpenProfile), and the
// stacks the counts refer to, and starts counting afresh. Not safe for concurrent use.
func (p *Profile) Take() ([]ProfileCount, ProfileStacks, error) {
	old := p.gen
	p.gen ^= 1
	if err := p.coll.Variables[profileVarGen].Set(p.gen); err != nil {
		p.gen = old
		return nil, nil, fmt.Errorf("switching the profile's generation: %w", err)
	}
	time.Sleep(flipSettle)
	counts := p.coll.Maps[profileMapProfileCounts0]
	stackMap := p.coll.Maps[profileMapProfileStacks0]
	if old == 1 {
		counts = p.coll.Maps[profileMapProfileCounts1]
		stackMap = p.coll.Maps[profileMapProfileStacks1]
	}
	if p.keys == nil {
		p.keys, p.vals = make([]profileTcProfileKey, ioBatch), make([]profileTcProfileCount, ioBatch)
	}
	var out []ProfileCount
	stacks := ProfileStacks{}
	frames := func(id int32) {
		if _, ok := stacks[id]; ok || id < 0 {
			return
		}
		ips := make([]uint64, stackMap.ValueSize()/8)
		if err := stackMap.Lookup(uint32(id), &ips); err != nil {
			stacks[id] = nil
			return
		}
		for i, ip := range ips {
			if ip == 0 {
				ips = ips[:i]
				break
			}
		}
		stacks[id] = ips
	}
	// Read and deleted a batch at a time: nothing writes this generation any more.
	var cursor ebpf.MapBatchCursor
	for {
		n, err := counts.BatchLookupAndDelete(&cursor, p.keys, p.vals, nil)
		for i := range n {
			k, v := &p.keys[i], &p.vals[i]
			out = append(out, ProfileCount{
				Pid: int32(k.Pid), Tid: int32(k.Tid), Process: cString(v.Process[:]), Thread: cString(v.Thread[:]),
				KernelStack: k.Kstack, UserStack: k.Ustack, Span: uint16(k.Span), Samples: v.Samples,
			})
			frames(k.Kstack)
			frames(k.Ustack)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return out, stacks, fmt.Errorf("reading the profile's counts: %w", err)
		}
	}
	return out, stacks, empty(stackMap, uint32(0))
}

// empty deletes every entry of m (a stack map, which has no batch operations); key is a
// value of m's key type. The keys are listed first, then deleted.
func empty[K any](m *ebpf.Map, key K) error {
	var keys []K
	err := m.NextKey(nil, &key)
	for err == nil {
		keys = append(keys, key)
		err = m.NextKey(key, &key)
	}
	if !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("listing %s: %w", m, err)
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("emptying %s: %w", m, err)
		}
	}
	return nil
}

// cString is a NUL-terminated name.
func cString(b []int8) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	s := make([]byte, n)
	for i := range n {
		s[i] = byte(b[i])
	}
	return string(s)
}

// LostSamples counts the samples not counted because a minute had more distinct
// (thread, stacks) than the counts map holds; LostStacks the stacks not stored because
// their bucket of the stack map held another (their samples are counted without them).
func (p *Profile) LostSamples() uint64 { return p.counter(profileVarLostSamples) }

// LostStacks: see LostSamples.
func (p *Profile) LostStacks() uint64 { return p.counter(profileVarLostStacks) }

func (p *Profile) counter(name string) uint64 {
	var n uint64
	if p.coll == nil {
		return 0 // closed
	}
	_ = p.coll.Variables[name].Get(&n)
	return n
}

// Close stops sampling and frees the object. It may be called on a nil or partly opened
// Profile, and returns every error met.
func (p *Profile) Close() error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	for _, ev := range p.events {
		errs = append(errs, ev.Close())
	}
	p.links, p.events = nil, nil
	if p.coll != nil {
		p.coll.Close()
		p.coll = nil
	}
	return errors.Join(errs...)
}
