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
	// ProcRoot is where processes' maps and mapped files are read ("/proc" when "");
	// Kallsyms where kernel symbols are (ProcRoot/kallsyms when "").
	ProcRoot, Kallsyms string
	Wall               func() time.Time
	Log                *logrus.Entry
}

// Profiler writes the CPU profile a minute at a time: at each minute's end it takes what
// the kernel side counted, names the stacks' frames as the rows' are named
// (sampler/symbolize) and writes the minute. It runs apart from the tick loop: a minute's
// reading and symbolizing never delays a tick.
type Profiler struct {
	cfg     ProfileConfig
	kstacks *symbolize.KernelStacks
	ustacks *symbolize.UserStacks
	// taken are the stacks of the Take being symbolized, which the symbolizers read by
	// id + 1 (the ids of a Take fit 16 bits: the stack map holds fewer).
	taken bpf.ProfileStacks
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
	p := &Profiler{cfg: cfg}
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

// Run writes a minute at the end of each, until ctx is done; then it writes the minute so
// far, so that a stop loses nothing (a restart within the minute adds a second line for
// it: sum a minute's lines).
func (p *Profiler) Run(ctx context.Context) {
	p.kstacks.Load()
	minute := p.cfg.Wall().Truncate(time.Minute)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		timer.Reset(minute.Add(time.Minute).Sub(p.cfg.Wall()))
		select {
		case <-ctx.Done():
			p.Write(minute)
			return
		case <-timer.C:
		}
		now := p.cfg.Wall()
		if now.Before(minute.Add(time.Minute)) {
			continue // woken early (the wall clock was stepped back)
		}
		p.Write(minute)
		minute = now.Truncate(time.Minute)
	}
}

// Write takes what the kernel side counted since the last Write and writes it as minute's.
// A failure is logged: the profile is lost for the minute, the rows go on.
func (p *Profiler) Write(minute time.Time) {
	counts, stacks, err := p.cfg.Source.Take()
	if err != nil {
		p.cfg.Log.WithError(err).Warn("reading the CPU profile failed; some of the minute's samples are lost")
	}
	p.taken = stacks
	defer func() {
		for id := range stacks {
			p.kstacks.Forget(uint16(id + 1))
			p.ustacks.Forget(uint16(id + 1))
		}
		p.taken = nil
	}()
	now := p.cfg.Wall()
	hz := p.cfg.Source.Hz()
	// Stacks apart in the kernel (another address in the same function) may be one stack
	// once named: their samples are one line.
	type line struct {
		tid          int32
		kernel, user string // hashes
	}
	at := map[line]int{}
	rows := make([]state.ProfileRow, 0, len(counts))
	for _, c := range counts {
		r := state.ProfileRow{
			Minute: minute, Pid: c.Pid, Tid: c.Tid, Process: c.Process, Thread: c.Thread,
			Samples: c.Samples, Hz: hz,
		}
		if c.KernelStack >= 0 {
			r.KernelStack = p.kstacks.Get(uint16(c.KernelStack + 1)).Stack
		}
		if c.UserStack >= 0 {
			r.UserStack = p.ustacks.Get(&state.Thread{Pid: c.Pid, UserStack: uint16(c.UserStack + 1)}, now)
		}
		k := line{tid: c.Tid}
		if r.KernelStack != nil {
			k.kernel = r.KernelStack.Hash
		}
		if r.UserStack != nil {
			k.user = r.UserStack.Hash
		}
		if i, ok := at[k]; ok {
			rows[i].Samples += r.Samples
			continue
		}
		at[k] = len(rows)
		rows = append(rows, r)
	}
	p.ustacks.Expire(now)
	if err := p.cfg.Sink.WriteProfile(minute, rows); err != nil {
		p.cfg.Log.WithError(err).Warn("writing the CPU profile failed")
	}
}
