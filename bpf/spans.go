// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/threadcap/threadcap/bpf/usdt"
)

// Limits of the kernel side's spans (threadcap.h).
const (
	MaxSpans = 64 // TC_MAX_SPANS
	// MaxSpanProbes is how many probe sites can be attached in all (TC_MAX_PROBES).
	MaxSpanProbes = 256
	// SpanDepth is how many spans a thread can have open at once (TC_SPAN_DEPTH).
	SpanDepth = len(threadcapTcSpanThread{}.Frames)
	// SpanBuckets is the number of log2 histogram buckets (TC_SPAN_BUCKETS).
	SpanBuckets = len(threadcapTcSpanStats{}.WallHist)
	// DefaultSpanThreads is how many threads can have spans open at once: each takes
	// about 800 bytes of kernel memory, only while it has an entry.
	DefaultSpanThreads = 8192
)

// SpanProbe is one probe site that starts or ends span Span.
type SpanProbe struct {
	Span uint16
	End  bool
	Site usdt.Site
	// IntArg and TextArg are what a start captures: an integer, and the address of a
	// NUL-terminated string. Kind usdt.ArgNone captures nothing.
	IntArg, TextArg usdt.Arg
}

// configureSpans sizes the span maps and drops the probe program when no span is asked
// for, so that threadcap without spans loads nothing more than before.
func configureSpans(spec *ebpf.CollectionSpec, cfg Config) error {
	if len(cfg.Spans) > MaxSpanProbes {
		return fmt.Errorf("spans need %d probe sites; at most %d can be attached", len(cfg.Spans), MaxSpanProbes)
	}
	if len(cfg.Spans) == 0 {
		delete(spec.Programs, threadcapProgOnSpanProbe)
		delete(spec.Programs, threadcapProgOnExitSpans)
		return nil
	}
	threads := cfg.SpanThreads
	if threads == 0 {
		threads = DefaultSpanThreads
	}
	spec.Maps[threadcapMapSpanThreads].MaxEntries = threads
	if err := spec.Variables[threadcapVarSpansOn].Set(uint8(1)); err != nil {
		return fmt.Errorf("setting spans on: %w", err)
	}
	return nil
}

// attachSpans writes each probe site's description at its index, then attaches the
// probe program there with that index as its cookie. Uprobes attach to the file's inode,
// so processes started later are probed too; a USDT semaphore is counted up by the kernel
// (the uprobe's reference counter) in every process that maps the file.
func (t *Tracker) attachSpans(probes []SpanProbe) error {
	if len(probes) == 0 {
		return nil
	}
	prog := t.coll.Programs[threadcapProgOnSpanProbe]
	m := t.coll.Maps[threadcapMapSpanProbes]
	exes := map[string]*link.Executable{}
	for i, p := range probes {
		if p.Span >= MaxSpans {
			return fmt.Errorf("span id %d: at most %d spans", p.Span, MaxSpans)
		}
		desc := threadcapTcProbe{Span: p.Span, IntArg: tcArg(p.IntArg), TextArg: tcArg(p.TextArg)}
		if p.End {
			desc.End = 1
		}
		if err := m.Update(uint32(i), &desc, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("writing probe %d: %w", i, err)
		}
		ex, ok := exes[p.Site.Path]
		if !ok {
			var err error
			if ex, err = link.OpenExecutable(p.Site.Path); err != nil {
				return fmt.Errorf("opening %s for uprobes: %w", p.Site.Path, err)
			}
			exes[p.Site.Path] = ex
		}
		opts := &link.UprobeOptions{Address: p.Site.Offset, RefCtrOffset: p.Site.Semaphore, Cookie: uint64(i)}
		var l link.Link
		var err error
		if p.Site.Return {
			l, err = ex.Uretprobe("", prog, opts)
		} else {
			l, err = ex.Uprobe("", prog, opts)
		}
		if err != nil {
			return explain(fmt.Errorf("attaching a span probe at %s+%#x: %w", p.Site.Path, p.Site.Offset, err))
		}
		t.links = append(t.links, l)
	}
	t.spans = len(probes)
	return nil
}

func tcArg(a usdt.Arg) threadcapTcArg {
	out := threadcapTcArg{Value: a.Value, RegOff: a.RegOff, Kind: threadcapTcArgKind(a.Kind), Size: a.Size}
	if a.Signed {
		out.IsSigned = 1
	}
	return out
}

// SpanFrame is one open span of a thread.
type SpanFrame struct {
	Span    uint16
	StartNs uint64 // CLOCK_MONOTONIC
	Text    string // the string captured at its start, as the kernel copied it
	Int     int64
}

// SpanThread is a thread's open spans, outermost first.
type SpanThread struct {
	Tid       uint32
	TaskStart uint64 // the thread's start time, as in its record
	Frames    []SpanFrame
	// TickNs is the tick (see Tracker.SetTick) whose innermost open span AtTick holds, kept
	// by the thread's first probe hit at or after it; AtTickOpen is false when it was in
	// no span then. When TickNs is not the tick asked about, no probe hit the thread since
	// that tick and Frames are as they stood at it.
	TickNs     uint64
	AtTickOpen bool
	AtTick     SpanFrame
}

// At returns the innermost span the thread was in at tick mono, an instant named by
// SetTick before it came, and whether it was in one.
func (th *SpanThread) At(mono uint64) (SpanFrame, bool) {
	if th.TickNs == mono {
		return th.AtTick, th.AtTickOpen
	}
	// No probe since the tick: the stack is as it was then. A frame begun after mono can
	// only be there when the tick was not named ahead (the first, say).
	for i := len(th.Frames) - 1; i >= 0; i-- {
		if th.Frames[i].StartNs <= mono {
			return th.Frames[i], true
		}
	}
	return SpanFrame{}, false
}

func spanFrame(f *threadcapTcSpanFrame) SpanFrame {
	text := f.Text[:]
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	return SpanFrame{Span: f.Span, StartNs: f.StartNs, Text: string(text), Int: f.IntArg}
}

// SpanThreads calls fn for every thread with an open span, or one whose span at the tick
// mono (an instant named by SetTick, 0 for none) is kept, reading the threads in batches
// (a syscall per spanBatch threads).
//
// A copy made by syscall may interleave with a probe's write however seq falls in it, so
// the threads are read twice, and a thread is taken when the two copies agree on what the
// rows of tick mono need (see agree). A thread whose copies do not is read again, alone,
// a few times; a thread still torn is left out for this tick and counted (TornReads).
func (t *Tracker) SpanThreads(mono uint64, fn func(*SpanThread)) error {
	if t.spans == 0 {
		return nil
	}
	if t.spanKeys == nil {
		t.spanKeys, t.spanVals = make([]uint32, spanBatch), make([]threadcapTcSpanThread, spanBatch)
	}
	m := t.coll.Maps[threadcapMapSpanThreads]
	var err error
	if t.spanFirst, err = t.readSpanThreads(m, t.spanFirst[:0]); err != nil {
		return err
	}
	if t.spanSecond, err = t.readSpanThreads(m, t.spanSecond[:0]); err != nil {
		return err
	}
	second := make(map[uint32]int, len(t.spanSecond))
	for i := range t.spanSecond {
		second[t.spanSecond[i].key] = i
	}
	var th SpanThread
	for i := range t.spanFirst {
		v := &t.spanFirst[i].val
		j, ok := second[t.spanFirst[i].key]
		if !ok {
			continue // deleted between the reads: the thread exited
		}
		if !agree(v, &t.spanSecond[j].val, mono) {
			if !t.spanThreadAgain(m, t.spanFirst[i].key, v, mono) {
				t.torn.Add(1)
				continue
			}
		}
		if v.Depth == 0 && v.AtTickOpen == 0 {
			continue
		}
		th = SpanThread{Tid: v.Tid, TaskStart: v.TaskStartNs, Frames: th.Frames[:0],
			TickNs: v.TickNs, AtTickOpen: v.AtTickOpen != 0, AtTick: spanFrame(&v.AtTick)}
		for k := range v.Frames[:min(int(v.Depth), SpanDepth)] {
			th.Frames = append(th.Frames, spanFrame(&v.Frames[k]))
		}
		fn(&th)
	}
	return nil
}

// spanEntry is one thread's open spans as read, by its key.
type spanEntry struct {
	key uint32
	val threadcapTcSpanThread
}

// readSpanThreads appends every entry of the span threads map to into.
func (t *Tracker) readSpanThreads(m *ebpf.Map, into []spanEntry) ([]spanEntry, error) {
	err := batches(m, t.spanKeys, t.spanVals, func(i int) {
		into = append(into, spanEntry{key: t.spanKeys[i], val: t.spanVals[i]})
	})
	return into, err
}

// agree reports whether two copies of a thread's entry, a taken before b, are whole as
// far as tick mono needs, and then leaves in a what to use.
//
// Equal and even: seq is the same in both only if no write began or ended between the two
// reads of it, and the bytes that a write in progress during the first copy tore differ
// from what the second copy reads, unless a later write put back the very same bytes
// (timestamps, which never repeat). Under a database's load a thread's spans change
// faster than that (two writes a query), but then its first probe after the tick has kept
// the span at the tick, written once per tick before tick_ns: two copies that both hold
// tick_ns = mono and the same kept span agree on all a row needs.
func agree(a, b *threadcapTcSpanThread, mono uint64) bool {
	if a.Seq&1 == 0 && *a == *b {
		return true
	}
	if mono == 0 || a.TickNs != mono || b.TickNs != mono || a.Tid != b.Tid || a.TaskStartNs != b.TaskStartNs ||
		a.AtTickOpen != b.AtTickOpen || a.AtTick != b.AtTick {
		return false
	}
	*a = *b
	return true
}

// spanThreadAgain reads one thread's entry into v until two copies in a row agree (see
// agree), a few times at most.
func (t *Tracker) spanThreadAgain(m *ebpf.Map, key uint32, v *threadcapTcSpanThread, mono uint64) bool {
	var again threadcapTcSpanThread
	if m.Lookup(key, v) != nil {
		return false
	}
	for range 4 {
		if m.Lookup(key, &again) != nil {
			return false
		}
		if agree(v, &again, mono) {
			return true
		}
		*v = again
	}
	return false
}

// spanBatch is how many threads with open spans one syscall reads.
const spanBatch = 64

// SpanStats is what the ended spans of one span added up to, cumulative since Open.
type SpanStats struct {
	Count  uint64
	WallNs uint64
	// PartNs splits WallNs: on CPU, runnable, sleeping (stopped included) and
	// uninterruptible, in the order of state.State.
	PartNs [4]uint64
	// WallHist and CPUHist count spans by wall and on-CPU time: bucket 0 under 1 µs,
	// bucket b in [2^(b-1), 2^b) µs, the last one everything longer.
	WallHist, CPUHist [SpanBuckets]uint64
}

// SpanStats reads the sums of span ids 0..n-1, summed over the CPUs.
func (t *Tracker) SpanStats(n int) ([]SpanStats, error) {
	if t.spans == 0 {
		return nil, nil
	}
	out := make([]SpanStats, n)
	var perCPU []threadcapTcSpanStats
	for id := range n {
		if err := t.coll.Maps[threadcapMapSpanStats].Lookup(uint32(id), &perCPU); err != nil {
			return nil, fmt.Errorf("reading span %d: %w", id, err)
		}
		s := &out[id]
		for _, c := range perCPU {
			s.Count += c.Count
			s.WallNs += c.WallNs
			for i := range s.PartNs {
				s.PartNs[i] += c.PartNs[i]
			}
			for i := range SpanBuckets {
				s.WallHist[i] += c.WallHist[i]
				s.CPUHist[i] += c.CpuHist[i]
			}
		}
	}
	return out, nil
}

// SpanCounters are the spans' own losses, cumulative since Open.
type SpanCounters struct {
	NoRecord   uint64 // probes hit by threads without a record
	NoRoom     uint64 // starts not kept: too many threads with spans, or too deep
	MissedEnds uint64 // open spans dropped, their ends never seen
	Unmatched  uint64 // ends without an open span
}

// SpanCounters sums the per-CPU span counters.
func (t *Tracker) SpanCounters() (SpanCounters, error) {
	var c SpanCounters
	if t.spans == 0 {
		return c, nil
	}
	var errs []error
	for which, dst := range map[threadcapTcCounter]*uint64{
		threadcapTcCounterTC_SPAN_NO_RECORD:   &c.NoRecord,
		threadcapTcCounterTC_SPAN_NO_ROOM:     &c.NoRoom,
		threadcapTcCounterTC_SPAN_MISSED_ENDS: &c.MissedEnds,
		threadcapTcCounterTC_SPAN_UNMATCHED:   &c.Unmatched,
	} {
		n, err := t.counter(which)
		*dst = n
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// SpanDef is one span as configured: its start and end in a binary, and which arguments
// (1-based; 0: none) of its start to capture.
type SpanDef struct {
	Binary          string
	Start, End      usdt.Point
	IntArg, TextArg int
}

// Probes finds every site of d's start and end in its binary, as span id span. An
// error says what is missing and what the binary offers instead.
func (d SpanDef) Probes(span uint16) ([]SpanProbe, error) {
	starts, err := d.Start.Sites(d.Binary)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	ends, err := d.End.Sites(d.Binary)
	if err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	var probes []SpanProbe
	for _, s := range starts {
		p := SpanProbe{Span: span, Site: s}
		for _, want := range []struct {
			n   int
			dst *usdt.Arg
		}{{d.IntArg, &p.IntArg}, {d.TextArg, &p.TextArg}} {
			if want.n == 0 {
				continue
			}
			if s.Return {
				return nil, fmt.Errorf("start %s: a return probe has no arguments to capture", d.Start)
			}
			if *want.dst, err = s.Arg(want.n); err != nil {
				return nil, fmt.Errorf("start %s: %w", d.Start, err)
			}
		}
		probes = append(probes, p)
	}
	for _, s := range ends {
		probes = append(probes, SpanProbe{Span: span, End: true, Site: s})
	}
	return probes, nil
}
