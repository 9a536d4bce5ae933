// SPDX-License-Identifier: Apache-2.0

// Package sampler is threadcap's tick loop: at every tick it reads every thread's record,
// works out how each spent the time since the previous tick, and hands one row per thread
// worth recording to a sink.
package sampler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/sampler/symbolize"
	"github.com/threadcap/threadcap/state"
)

// Source is the kernel side as the sampler reads it; *bpf.Tracker implements it.
type Source interface {
	// SetTick names the next tick's instant (CLOCK_MONOTONIC ns) before it comes, so
	// that the kernel side keeps each thread's view as of that instant.
	SetTick(mono uint64)
	// Scan calls fn for every thread whose record may have changed since the
	// CLOCK_MONOTONIC time since (0: every thread), and every thread keep names (nil:
	// none), as the thread was at tick, an instant named by SetTick.
	Scan(since, tick uint64, keep func(tid int32) bool, fn func(slot uint32, th *state.Thread))
	// Free gives back the slot of an exited thread once its last record has been read.
	Free(slot uint32) error
	// Counters reads the kernel side's own losses, cumulative since it started: the
	// sampler reports them as they grow (losses.go) and keeps some in its Stats.
	Counters() (bpf.Counters, error)
}

// StackSource reads the stacks the kernel side captured; *bpf.Tracker implements it.
type StackSource interface {
	// Stack returns the frames of stack id (as records hold it: id + 1), innermost first.
	Stack(id uint16) ([]uint64, error)
	// PruneStacks deletes the stacks no record holds and returns their ids, which the
	// kernel side may give other stacks from then on.
	PruneStacks() ([]uint16, error)
}

// DeferredStackSource is a StackSource whose kernel stacks off CPU are walked only for the
// episodes a tick sees (see bpf's kstacks.go); *bpf.Tracker implements it. Records then
// hold none: the sampler takes those walked as episodes ended and asks for the rest.
type DeferredStackSource interface {
	// DeferredStacks is the states whose stacks are deferred; nil when none are (the
	// kernel does not allow it, or they are walked at the switch-out for user stacks).
	DeferredStacks() []state.State
	// TickKernelStacks moves the stacks of episodes that spanned tick and have ended into
	// into, by thread, dropping those of earlier ticks.
	TickKernelStacks(tick uint64, into map[int32][]uint64) error
	// AskKernelStacks walks the stacks of threads still waiting, in place.
	AskKernelStacks(asks []bpf.KernelStackAsk) error
}

// Sink takes each tick's rows, in one call or, when there are many, in batches with the
// same tick time; output.Writer implements it.
type Sink interface {
	Write(tick time.Time, rows []state.Sample) error
}

// Config is how a Sampler samples.
type Config struct {
	// Interval is the time between ticks: one second for 1 Hz.
	Interval time.Duration
	Filter   Filter
	// ProcRoot is the proc filesystem to seed from and read process context from.
	ProcRoot string
	// Self is threadcap's own pid, left out of the rows.
	Self int32
	// CgroupRoot is where the cgroup v2 hierarchy is mounted; found in mountinfo when "".
	CgroupRoot string
	// NoCgroup leaves the cgroup column empty, saving a /proc read per new cgroup.
	NoCgroup bool
	// Stacks reads the stacks the kernel side captured (which, and when, is the kernel
	// side's configuration); nil leaves the kernel_stack and user_stack columns empty.
	Stacks StackSource
	// StackStates are the states at whose switch-outs the kernel side captures stacks
	// (bpf.StackMode.States): the rows in them that lack a kernel stack are counted, and
	// weighed against the stacks the kernel side lost. StackEntries is the size of its
	// stack map, named when it is too small.
	StackStates  []state.State
	StackEntries uint32
	// Kallsyms is where kernel symbols are read from; ProcRoot/kallsyms when "".
	Kallsyms string
	// NoFdTarget leaves the fd_target column empty, saving a stat per descriptor and tick
	// of threads in descriptor syscalls, and a readlink per new descriptor.
	NoFdTarget bool
	// IO reads the block requests the kernel side tracks; nil leaves the io_ columns
	// empty. Sys is the sysfs mount disks are named from ("/sys" when "").
	IO  IOSource
	Sys string
	// TCP reads, in the kernel, the TCP sockets rows wait on (the tcp_ columns); nil
	// asks sock_diag instead, in each socket's network namespace (a kernel without
	// bpf_task_from_pid: bpf.ErrNoTCPSockets). Unused with NoFdTarget.
	TCP TCPSource
	// TCPNames names TCP sockets in fd_target through TCP too, which reads the socket a
	// descriptor holds, rather than from the namespace's table of every TCP socket.
	TCPNames bool
	// Spans reads the threads' open spans and the spans' sums, named by SpanNames (span
	// id order); SpanSink takes each minute's sums. Nil Spans: no span columns, no
	// spans file.
	Spans     SpanSource
	SpanNames []string
	SpanSink  SpanSink
	// Mono is the kernel side's clock (CLOCK_MONOTONIC ns); Wall the clock of the rows.
	Mono func() uint64
	Wall func() time.Time
	Log  *logrus.Entry
	// Observer is told of every tick and its rows; nil tells no one.
	Observer Observer
}

// The sampling intervals allowed: 100 Hz down to one sample an hour.
const (
	minInterval = 10 * time.Millisecond
	maxInterval = time.Hour
)

// ErrInterval is why CheckInterval refuses an interval.
var ErrInterval = errors.New("out of range: use 100 Hz (10ms) down to one sample an hour")

// CheckInterval accepts the sampling intervals allowed.
func CheckInterval(d time.Duration) error {
	if d < minInterval || d > maxInterval {
		return fmt.Errorf("sampling interval %v is %w", d, ErrInterval)
	}
	return nil
}

// Validate reports every problem in the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if err := CheckInterval(c.Interval); err != nil {
		errs = append(errs, err)
	}
	if c.Mono == nil || c.Wall == nil || c.Log == nil {
		errs = append(errs, errors.New("sampler needs its clocks and a logger"))
	}
	return errors.Join(errs...)
}

// Stats are the sampler's own counts since it started.
type Stats struct {
	Ticks        uint64
	SkippedTicks uint64 // ticks not taken because the one before ran past them
	Rows         uint64
	// UntrackedThreads counts threads the kernel side had no room for, LostUpdates the
	// events about them, LostStacks the stacks it had no room for and UnseenSwitches the
	// switches it repaired (see bpf.Counters); all as of the last read of the Source's
	// Counters.
	UntrackedThreads, LostUpdates, LostStacks, UnseenSwitches uint64
	// TornReads, RecoveredRecords and WriteConflicts are defects of the protocol between
	// the kernel side's writers and this reader (bpf.Counters): each should stay 0.
	TornReads, RecoveredRecords, WriteConflicts uint64
	// StackRows counts the rows that should carry a kernel stack (off CPU in one of
	// Config.StackStates, not seeded), and StacklessRows those of them without one.
	StackRows, StacklessRows uint64
	// LongestPass is the longest an Iterator's pass over the threads took: the most
	// its reads of one tick were spread over (the hook-free mode; else 0).
	LongestPass time.Duration
}

// Log field keys.
const (
	fieldSkipped = "skipped_ticks"
	fieldStep    = "step"
	fieldThreads = "threads"
	fieldSeeded  = "seeded"
)

// Sampler turns records into rows, one tick at a time.
type Sampler struct {
	cfg      Config
	src      Source
	sink     Sink
	prev     []snapshot // by slot: the record as last read
	prevMono uint64     // the previous tick, on the Mono clock
	armed    armedTick  // the next tick, as the kernel side was told of it
	seeded   map[int32]*state.Thread
	procs    *procinfo.Processes
	cgroups  *procinfo.Cgroups
	fds      *procinfo.FdTargets
	kstacks  *symbolize.KernelStacks // nil without Config.Stacks
	ustacks  *symbolize.UserStacks   // nil without Config.Stacks
	io       *ioRequests             // nil without Config.IO
	ioStats  *ioMinutes              // nil without Config.IO or a sink that takes it
	prune    stackPrune
	rows     []state.Sample // this tick's, since the last flush
	writeErr error          // the first failed Write of this tick
	dead     []uint32
	stats    Stats
	tracked  int // threads in prev: those holding a record
	slowLog  rateLimit
	iterLog  rateLimit // failed iterations (iterate.go)
	updates  updates
	losses   losses
	spans    spans

	// workloads names the container, pod and unit of each cgroup path.
	workloads *procinfo.Workloads
	// tcp finds the TCP sockets rows wait on (and reads them through sock_diag without
	// Config.TCP); tcpRows are those of the rows since the last flush.
	tcp     *procinfo.TCPStates
	tcpRows tcpBatch
	// deferred takes the kernel stacks of rows off CPU when stacks are deferred; nil
	// otherwise.
	deferred *deferredStacks
}

// New makes a Sampler reading src and writing to sink.
func New(cfg Config, src Source, sink Sink) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = procinfo.Cgroup2Mount(cfg.ProcRoot)
	}
	if cfg.Kallsyms == "" {
		cfg.Kallsyms = filepath.Join(cfg.ProcRoot, "kallsyms")
	}
	procs, err := procinfo.NewProcesses(cfg.ProcRoot)
	if err != nil {
		return nil, err
	}
	var kstacks *symbolize.KernelStacks
	var ustacks *symbolize.UserStacks
	if cfg.Stacks != nil {
		kstacks = symbolize.NewKernelStacks(cfg.Stacks, cfg.Kallsyms, cfg.Log)
		if ustacks, err = symbolize.NewUserStacks(cfg.Stacks, cfg.ProcRoot); err != nil {
			return nil, err
		}
	}
	var deferred *deferredStacks
	if d, ok := cfg.Stacks.(DeferredStackSource); ok && d.DeferredStacks() != nil {
		deferred = newDeferredStacks(d, d.DeferredStacks(), cfg.Log)
	}
	s := &Sampler{
		cfg: cfg, src: src, sink: sink, procs: procs,
		cgroups: procinfo.NewCgroups(cfg.ProcRoot, cfg.CgroupRoot),
		fds:     procinfo.NewFdTargets(cfg.ProcRoot),
		kstacks: kstacks,
		ustacks: ustacks,
		seeded:  map[int32]*state.Thread{},
		slowLog: rateLimit{every: time.Minute},
		iterLog: rateLimit{every: time.Minute},
		updates: newUpdates(),
		losses:  newLosses(cfg.StackEntries),
		spans:   spans{open: map[uint32]openSpan{}},
		tcpRows: tcpBatch{log: rateLimit{every: time.Minute}},
	}
	s.workloads, s.tcp, s.deferred = procinfo.NewWorkloads(), procinfo.NewTCPStates(cfg.ProcRoot), deferred
	if cfg.TCPNames && cfg.TCP != nil {
		s.fds.NameTCP(s.nameTCP)
	}
	if cfg.IO != nil {
		s.io = newIORequests(cfg.IO, cfg.Sys, cfg.Log)
		if ios, ok := sink.(IOSink); ok {
			s.ioStats = &ioMinutes{
				src: cfg.IO, sink: ios, names: s.io.names, log: cfg.Log,
				errLog: rateLimit{every: time.Minute},
			}
		}
	}
	if len(cfg.StackStates) > 0 {
		s.sink = &stackRows{Sink: sink, captured: cfg.StackStates, stats: &s.stats}
	}
	return s, nil
}

// Seed reads every thread from /proc, so that the first tick shows threads the kernel
// side has not seen yet. Call it after the kernel side is attached.
func (s *Sampler) Seed() error {
	threads, err := state.Seed(s.cfg.ProcRoot)
	if err != nil {
		return fmt.Errorf("seeding from %s: %w", s.cfg.ProcRoot, err)
	}
	for i := range threads {
		s.seeded[threads[i].Tid] = &threads[i]
	}
	s.cfg.Log.WithField(fieldThreads, len(threads)).Info("seeded threads from /proc")
	return nil
}

// armedTick is a tick named to the kernel side before it came: its label and its instant.
type armedTick struct {
	wall time.Time
	mono uint64
}

// arm tells the kernel side the instant of the tick labelled wall, still to come. The
// monotonic clock is read between two reads of the wall clock, again while the thread was
// preempted or interrupted in between, keeping the closest pair: a tick named late or
// early by half the gap is a row interval that much longer or shorter than its label says.
// It reports false, arming nothing, when the instant has already passed (the sampler was
// held up between choosing it and arming it): its rows would be taken later than labelled.
func (s *Sampler) arm(wall time.Time) bool {
	var mono uint64
	var ahead time.Duration
	gap := time.Duration(math.MaxInt64)
	for range 16 {
		before := s.cfg.Wall()
		m := s.cfg.Mono()
		after := s.cfg.Wall()
		if g := after.Sub(before); g < gap {
			gap, mono, ahead = g, m, wall.Sub(before.Add(g/2))
		}
		if gap < 2*time.Microsecond {
			break
		}
	}
	if ahead <= 0 {
		return false
	}
	mono += uint64(ahead)
	s.src.SetTick(mono)
	s.armed = armedTick{wall: wall, mono: mono}
	return true
}

// firstTickLead is how soon after Run starts its first tick is taken: longer than a
// scheduler tick (10 ms at HZ=100), so that every thread running by then has hit a probe,
// and a thread still only seeded from /proc is not running (see state.FromProc).
const firstTickLead = 20 * time.Millisecond

// settle is how long after a tick's instant its records are read. The kernel side puts
// right a switch it was not told of at the next timer on that CPU, the scheduler's tick at
// the latest (10 ms at HZ=100, later when the hypervisor holds the CPU), and keeps the
// repaired view at the tick; read before that, the tick shows the thread that left still
// on CPU beside the one that came in, and the CPU time of one interval in the next. Under
// test/invariants' load, 12 ms still let that through at one run in eight (2.5 ms of CPU
// time moved to the next tick); 30 ms, in none of ten. A quarter of the interval at most,
// so that reading still ends well before the next tick. The hook-free mode's records have
// no switch to put right: the pass at the tick writes them (Sampler.settle).
func settle(interval time.Duration) time.Duration {
	return min(30*time.Millisecond, interval/4)
}

// Run takes a first tick at once, then ticks at every wall-clock multiple of the interval
// until ctx ends. A tick that runs past the next boundary makes the sampler skip the
// boundaries it missed (counted in Stats), never queue them.
func (s *Sampler) Run(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil // stopped before the first tick, which can be a long one
	}
	// The first tick is armed too, a moment ahead: an instant read from the clock and only
	// then told to the kernel side would miss the writes made in between, which under load
	// can be many.
	first := s.cfg.Wall().Add(firstTickLead)
	for !s.arm(first) {
		first = s.cfg.Wall().Add(firstTickLead)
	}
	time.Sleep(first.Sub(s.cfg.Wall()) + s.settle())
	if err := s.Tick(first); err != nil {
		return err
	}
	last := s.cfg.Wall().Truncate(s.cfg.Interval)
	clock := stepWatch{wall: s.cfg.Wall(), mono: s.cfg.Mono()}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := s.cfg.Wall()
		if step := clock.stepped(now, s.cfg.Mono(), s.cfg.Interval); step != 0 {
			// The boundaries between the old time and the new were never due: not missed.
			s.cfg.Log.WithField(fieldStep, step.String()).Warn("the wall clock was stepped; ticks follow it")
			last = now.Truncate(s.cfg.Interval)
		}
		next := nextTick(now, s.cfg.Interval)
		for !s.arm(next) {
			next = next.Add(s.cfg.Interval)
		}
		if missed := int64(next.Sub(last)/s.cfg.Interval) - 1; missed > 0 {
			s.stats.SkippedTicks += uint64(missed)
			if s.slowLog.allow(s.cfg.Wall()) {
				s.cfg.Log.WithField(fieldSkipped, s.stats.SkippedTicks).
					Warn("ticks take longer than the sampling interval; skipping the ticks missed")
			}
		}
		// The injected wall clock, not time.Until, so that a test's clock (or a wall clock
		// stepped mid-loop) agrees with the ticks it labels.
		timer.Reset(next.Sub(s.cfg.Wall()) + s.settle())
		select {
		case <-ctx.Done():
			// The minutes summed so far, which the next minute's first tick would write.
			now := s.cfg.Wall()
			if s.ioStats != nil {
				s.ioStats.stop(now)
			}
			s.writeSpans(now, true)
			return nil
		case <-s.updates.ready:
			s.takeUpdate()
			// A new rate starts from now: the boundaries of the old one are not missed ticks.
			last = s.cfg.Wall().Truncate(s.cfg.Interval)
			continue
		case <-timer.C:
		}
		if err := s.Tick(next); err != nil {
			return err
		}
		last = next
	}
}

// nextTick is the first multiple of interval after now, so that samples taken on many
// hosts line up, and a late tick does not push later ones back (no drift).
func nextTick(now time.Time, interval time.Duration) time.Time {
	return now.Truncate(interval).Add(interval)
}

// stepWatch tells a step of the wall clock (NTP, an administrator) from a slow tick: a
// step moves the wall clock and not the monotonic one.
type stepWatch struct {
	wall time.Time
	mono uint64
}

// stepped returns by how much the wall clock moved apart from the monotonic one since the
// last call, when that is more than tolerance; else 0.
func (w *stepWatch) stepped(wall time.Time, mono uint64, tolerance time.Duration) time.Duration {
	step := wall.Sub(w.wall) - time.Duration(mono-w.mono)
	w.wall, w.mono = wall, mono
	if step > tolerance || step < -tolerance {
		return step
	}
	return 0
}

// Stats returns the counts so far.
func (s *Sampler) Stats() Stats { return s.stats }

// rateLimit lets a repeated warning through once per period.
type rateLimit struct {
	every time.Duration
	last  time.Time
}

func (r *rateLimit) allow(now time.Time) bool {
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		return false
	}
	r.last = now
	return true
}
