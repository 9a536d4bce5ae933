// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/state"
)

// How the kernel side's losses are weighed and reported.
const (
	// lossQuiet is how long the untracked count must stay still before a full map is
	// reported over: threads are refused at switch-in, so a tick or two without a refusal
	// says little.
	lossQuiet = 10 * time.Second
	// stackLossEvery is how often lost stacks and unseen switches are looked at (the
	// counters themselves are read once a second), and stackLossSpan the span over which
	// the rows that lost their stack are weighed against those that should have one.
	stackLossEvery = 10 * time.Second
	stackLossSpan  = time.Minute
	// stackLossShare is the share of a span's rows that must lack their stack before the
	// user is asked to act: a stack now and then whose hash bucket is taken is no reason
	// to resize the map.
	stackLossShare = 0.01
)

// Log field keys.
const (
	fieldUntracked     = "untracked_threads"
	fieldLost          = "lost_updates"
	fieldLostStacks    = "lost_stacks"
	fieldStackRows     = "stack_rows"
	fieldStacklessRows = "stackless_rows"
	fieldStackEntries  = "stacks_entries"
	fieldUnseen        = "unseen_switches"
	fieldTorn          = "torn_reads"
	fieldRecovered     = "recovered_records"
	fieldConflicts     = "write_conflicts"
)

// losses is what the sampler knows of the kernel side's losses, to report each kind as
// often as it deserves, never once per tick: a full thread map at its start and end (and a
// reminder a minute while it lasts), lost stacks and unseen switches at debug level, and
// too many rows without their stack once a minute.
type losses struct {
	// read paces the reads: each is a syscall per counter, some 20 µs a tick together,
	// and a second's delay in noticing a full map changes nothing an operator does.
	read       rateLimit
	losing     bool
	lastGrowth time.Time
	remind     rateLimit
	readFailed rateLimit
	// stackRead paces the looks at lost stacks and unseen switches.
	stackRead rateLimit
	stacks    stackLosses
	unseen    uint64 // unseen switches as of the previous look
	// defects paces the warning that the records' write protocol failed somewhere.
	defects rateLimit
}

func newLosses(stackEntries uint32) losses {
	return losses{
		read: rateLimit{every: time.Second}, remind: rateLimit{every: time.Minute},
		readFailed: rateLimit{every: time.Minute}, stackRead: rateLimit{every: stackLossEvery},
		defects: rateLimit{every: time.Minute},
		stacks:  stackLosses{entries: stackEntries},
	}
}

// checkLosses copies the kernel side's loss counters into the stats and reports what they
// deserve: a full thread map (the threads refused get no rows until a slot frees up, which
// an operator fixes by raising the capacity), lost stacks, unseen switches.
func (s *Sampler) checkLosses(now time.Time) {
	if !s.losses.read.allow(now) {
		return
	}
	c, err := s.src.Counters()
	if err != nil {
		if s.losses.readFailed.allow(now) {
			s.cfg.Log.WithError(err).Warn("reading the kernel side's loss counters failed; its losses go unreported")
		}
		return
	}
	s.checkUntracked(now, c)
	s.checkDefects(now, c)
	s.stats.LostStacks, s.stats.UnseenSwitches = c.LostStacks, c.UnseenSwitches
	if s.losses.stackRead.allow(now) {
		l := &s.losses
		l.stacks.report(l.stacks.read(now, stackCounts{lost: c.LostStacks, expected: s.stats.StackRows, missing: s.stats.StacklessRows}), s.cfg.Log)
		if c.UnseenSwitches > l.unseen {
			s.cfg.Log.WithFields(logrus.Fields{fieldUnseen: c.UnseenSwitches, "new_unseen_switches": c.UnseenSwitches - l.unseen}).
				Debug("threads left a CPU without a switch the kernel side saw: their records were repaired from the kernel's CPU time")
		}
		l.unseen = c.UnseenSwitches
	}
}

// checkDefects warns, at most once a minute, when a torn read, a recovered record or a
// write conflict is new: none should ever happen (see bpf.Counters), and each costs a
// thread's row at a tick, or a state change in its record.
func (s *Sampler) checkDefects(now time.Time, c bpf.Counters) {
	grew := c.TornReads > s.stats.TornReads || c.RecoveredRecords > s.stats.RecoveredRecords ||
		c.WriteConflicts > s.stats.WriteConflicts
	s.stats.TornReads, s.stats.RecoveredRecords, s.stats.WriteConflicts = c.TornReads, c.RecoveredRecords, c.WriteConflicts
	if grew && s.losses.defects.allow(now) {
		s.cfg.Log.WithFields(logrus.Fields{fieldTorn: c.TornReads, fieldRecovered: c.RecoveredRecords, fieldConflicts: c.WriteConflicts}).
			Warn("thread records were found torn or left claimed, or a write was not made: a defect, please report it; " +
				"the threads concerned miss a row or a state change")
	}
}

// checkUntracked reports a full thread map.
func (s *Sampler) checkUntracked(now time.Time, c bpf.Counters) {
	grew := c.UntrackedThreads > s.stats.UntrackedThreads
	s.stats.UntrackedThreads, s.stats.LostUpdates = c.UntrackedThreads, c.LostUpdates
	log := s.cfg.Log.WithFields(logrus.Fields{fieldUntracked: c.UntrackedThreads, fieldLost: c.LostUpdates})
	l := &s.losses
	switch {
	case grew && !l.losing:
		l.losing, l.lastGrowth = true, now
		l.remind.last = now
		log.Warn("thread map is full: new threads get no rows until others exit; raise the capacity")
	case grew:
		l.lastGrowth = now
		if l.remind.allow(now) {
			log.Warn("thread map is still full: new threads get no rows until others exit; raise the capacity")
		}
	case l.losing && now.Sub(l.lastGrowth) >= lossQuiet:
		l.losing = false
		log.Info("thread map has room again: new threads are tracked")
	}
}

// stackRows is the sampler's sink, looked through on the way to the writer: it counts in
// the stats the rows that should carry a kernel stack, those off CPU in a state whose
// stacks the kernel side captures and seen by it (not seeded from /proc), and those of
// them that have none. The kernel side counts the stacks it lost, but not those it stored,
// so what share of its captures were lost is not known; the share of rows that lost
// theirs is, and it is what a user of the files sees.
type stackRows struct {
	Sink
	captured []state.State
	stats    *Stats
}

func (r *stackRows) Write(tick time.Time, rows []state.Sample) error {
	for i := range rows {
		if rows[i].Seeded || !r.isCaptured(rows[i].State) {
			continue
		}
		r.stats.StackRows++
		if rows[i].KernelStack == nil {
			r.stats.StacklessRows++
		}
	}
	return r.Sink.Write(tick, rows)
}

func (r *stackRows) isCaptured(st state.State) bool {
	for _, c := range r.captured {
		if st == c {
			return true
		}
	}
	return false
}

// stackCounts are, cumulative since the start, the stacks the kernel side lost and the
// rows that should have had a stack and did not.
type stackCounts struct {
	lost, expected, missing uint64
}

// stackLosses weighs stack losses span by span, to log each one at debug level and ask
// for a bigger stack map only when a span's rows lost a significant share of their stacks.
type stackLosses struct {
	entries   uint32 // the stack map's size, for the warning
	last      stackCounts
	spanStart time.Time
	atStart   stackCounts
}

// verdict is what one look at the counts deserves.
type verdict struct {
	// newLost are the stacks lost since the previous look: worth a debug line.
	newLost uint64
	// span is the counts over a span that just ended with too many rows without their
	// stack, and lost stacks among the causes: worth a warning. Zero otherwise.
	span stackCounts
}

// read takes the counts at now.
func (s *stackLosses) read(now time.Time, c stackCounts) verdict {
	var v verdict
	if c.lost > s.last.lost {
		v.newLost = c.lost - s.last.lost
	}
	s.last = c
	if s.spanStart.IsZero() {
		s.spanStart, s.atStart = now, c
		return v
	}
	if now.Sub(s.spanStart) < stackLossSpan {
		return v
	}
	span := stackCounts{lost: c.lost - s.atStart.lost, expected: c.expected - s.atStart.expected, missing: c.missing - s.atStart.missing}
	s.spanStart, s.atStart = now, c
	// Rows lack a stack for other reasons too (a switch-out the kernel side did not see,
	// symbols that could not be read): only with stacks lost to the map is a bigger map
	// the fix.
	if span.lost > 0 && float64(span.missing) > stackLossShare*float64(span.expected) {
		v.span = span
	}
	return v
}

// report logs what v deserves.
func (s *stackLosses) report(v verdict, log *logrus.Entry) {
	if v.newLost > 0 {
		log.WithFields(logrus.Fields{fieldLostStacks: s.last.lost, "new_lost_stacks": v.newLost}).
			Debug("stacks lost: the stack map had no room for them (a stack whose hash bucket holds another is lost)")
	}
	if sp := v.span; sp.expected > 0 {
		log.WithFields(logrus.Fields{
			fieldLostStacks: sp.lost, fieldStacklessRows: sp.missing, fieldStackRows: sp.expected,
			"stackless_share": float64(sp.missing) / float64(sp.expected), fieldStackEntries: s.entries,
		}).Warn("more than 1% of the rows that should have a kernel_stack had none in the last minute, " +
			"and the stack map lost stacks: raise stacks.entries")
	}
}
