// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/symbolize"
	"github.com/threadcap/threadcap/state"
)

// ProfileSource is the CPU profile's kernel side; *bpf.Profile implements it.
type ProfileSource interface {
	// Take returns the counts since the last Take and the stacks they refer to.
	Take() ([]bpf.ProfileCount, bpf.ProfileStacks, error)
	// Hz is the rate: each sample stands for 1/Hz s of CPU.
	Hz() int
}

// ProfileSink takes each minute's profile rows; output.Writer implements it.
type ProfileSink interface {
	WriteProfile(minute time.Time, rows []state.ProfileRow) error
}

// ProfileConfig is what a Profiler reads, writes and names frames with.
type ProfileConfig struct {
	Source ProfileSource
	Sink   ProfileSink
	// SpanNames name the spans samples count by, in id order.
	SpanNames []string
	// ProcRoot is where processes' maps and mapped files are read ("/proc" when "");
	// Kallsyms where kernel symbols are (ProcRoot/kallsyms when "").
	ProcRoot, Kallsyms string
	Wall               func() time.Time
	Log                *logrus.Entry
}

// takeEvery is how often the Profiler takes what the kernel side counted and names its
// stacks: a process's frames are named from its maps, which are gone once it exits, so
// the stacks of a process that exits are named if it lived to the next take. A divisor of
// a minute, so that a take's samples are of one minute.
const takeEvery = 10 * time.Second

// Profiler writes the CPU profile a minute at a time: every takeEvery it takes what the
// kernel side counted and names the stacks' frames as the rows' are named
// (sampler/symbolize), and at each minute's end it writes the minute. It runs apart from
// the tick loop: reading and symbolizing never delays a tick.
type Profiler struct {
	cfg     ProfileConfig
	kstacks *symbolize.KernelStacks
	ustacks *symbolize.UserStacks
	// taken are the stacks of the Take being symbolized, which the symbolizers read by
	// id + 1 (the ids of a Take fit 16 bits: the stack map holds fewer).
	taken bpf.ProfileStacks
	// minute is what the takes since the last write counted, a row per thread and pair
	// of stacks once named (stacks apart in the kernel, another address in the same
	// function, are one stack once named).
	minute map[profileLine]*state.ProfileRow
	order  []profileLine
}

// profileLine is what a profile row counts samples by.
type profileLine struct {
	tid          int32
	kernel, user string // hashes
	span         uint16
}

// NewProfiler makes a Profiler; Run starts it.
func NewProfiler(cfg ProfileConfig) (*Profiler, error) {
	if cfg.Source == nil || cfg.Sink == nil || cfg.Wall == nil || cfg.Log == nil {
		return nil, errors.New("profiler needs its source, sink, clock and logger")
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.Kallsyms == "" {
		cfg.Kallsyms = filepath.Join(cfg.ProcRoot, "kallsyms")
	}
	p := &Profiler{cfg: cfg, minute: map[profileLine]*state.ProfileRow{}}
	p.kstacks = symbolize.NewKernelStacks(p, cfg.Kallsyms, cfg.Log)
	var err error
	if p.ustacks, err = symbolize.NewUserStacks(p, cfg.ProcRoot); err != nil {
		return nil, err
	}
	return p, nil
}

// Stack is symbolize.StackReader's, over the Take being symbolized.
func (p *Profiler) Stack(id uint16) ([]uint64, error) {
	return p.taken[int32(id)-1], nil
}

// Run takes every takeEvery (at wall-clock multiples of it) and writes each minute at its
// end, until ctx is done; then it writes the minute so far, so that a stop loses nothing
// (a restart within the minute adds a second line for it: sum a minute's lines).
func (p *Profiler) Run(ctx context.Context) {
	p.kstacks.Load()
	minute := p.cfg.Wall().Truncate(time.Minute)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := p.cfg.Wall().Truncate(takeEvery).Add(takeEvery)
		timer.Reset(next.Sub(p.cfg.Wall()))
		select {
		case <-ctx.Done():
			p.Write(minute)
			return
		case <-timer.C:
		}
		now := p.cfg.Wall()
		if now.Before(next) {
			continue // woken early (the wall clock was stepped back)
		}
		p.take(now)
		if now.Truncate(time.Minute).After(minute) {
			p.flush(minute)
			minute = now.Truncate(time.Minute)
		}
	}
}

// Write takes what the kernel side counted since the last take and writes the takes since
// the last write as minute's.
func (p *Profiler) Write(minute time.Time) {
	p.take(p.cfg.Wall())
	p.flush(minute)
}

// take adds what the kernel side counted since the last take to the minute, its stacks
// named. A failure is logged: the samples not read are lost, the rows go on.
func (p *Profiler) take(now time.Time) {
	counts, stacks, err := p.cfg.Source.Take()
	if err != nil {
		p.cfg.Log.WithError(err).Warn("reading the CPU profile failed; some of its samples are lost")
	}
	p.taken = stacks
	defer func() {
		for id := range stacks {
			p.kstacks.Forget(uint16(id + 1))
			p.ustacks.Forget(uint16(id + 1))
		}
		p.taken = nil
	}()
	hz := p.cfg.Source.Hz()
	for _, c := range counts {
		r := state.ProfileRow{Pid: c.Pid, Tid: c.Tid, Process: c.Process, Thread: c.Thread, Samples: c.Samples, Hz: hz}
		if c.KernelStack >= 0 {
			r.KernelStack = p.kstacks.Get(uint16(c.KernelStack + 1)).Stack
		}
		if c.UserStack >= 0 {
			r.UserStack = p.ustacks.Get(&state.Thread{Pid: c.Pid, UserStack: uint16(c.UserStack + 1)}, now)
		}
		if id := int(c.Span) - 1; id >= 0 && id < len(p.cfg.SpanNames) {
			r.Span = p.cfg.SpanNames[id]
		}
		k := profileLine{tid: c.Tid, span: c.Span}
		if r.KernelStack != nil {
			k.kernel = r.KernelStack.Hash
		}
		if r.UserStack != nil {
			k.user = r.UserStack.Hash
		}
		if have, ok := p.minute[k]; ok {
			have.Samples += r.Samples
			continue
		}
		p.minute[k] = &r
		p.order = append(p.order, k)
	}
	p.ustacks.Expire(now)
}

// flush writes the minute's rows, in the order they were first counted, and starts the
// next minute.
func (p *Profiler) flush(minute time.Time) {
	rows := make([]state.ProfileRow, 0, len(p.order))
	for _, k := range p.order {
		r := *p.minute[k]
		r.Minute = minute
		rows = append(rows, r)
	}
	clear(p.minute)
	p.order = p.order[:0]
	if err := p.cfg.Sink.WriteProfile(minute, rows); err != nil {
		p.cfg.Log.WithError(err).Warn("writing the CPU profile failed")
	}
}
