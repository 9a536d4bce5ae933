// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
)

// How often the kernel side's lost-stack count is read, and the span over which the rows
// that lost their stack are weighed against those that should have one. (A full thread
// record array is the sampler's to report: it reads those counters at every tick.)
const (
	countersEvery = 10 * time.Second
	stackLossSpan = time.Minute
	// stackLossShare is the share of a span's rows that must lack their stack before the
	// user is asked to act: a stack now and then whose hash bucket is taken is no reason
	// to resize the map.
	stackLossShare = 0.01
)

// Log field keys.
const (
	fieldLostStacks    = "lost_stacks"
	fieldStackRows     = "stack_rows"
	fieldStacklessRows = "stackless_rows"
	fieldStackEntries  = "stacks_entries"
)

// stackRows is the sampler's sink, looked through on the way to the writer: it counts the
// rows that should carry a kernel stack, those off CPU in a state whose stacks the kernel
// side captures and seen by it (not seeded from /proc), and those of them that have none.
// The kernel side counts the stacks it lost, but not those it stored, so what share of its
// captures were lost is not known; the share of rows that lost theirs is, and it is what a
// user of the files sees.
type stackRows struct {
	sampler.Sink
	captured []state.State
	// Written by the sampler's goroutine, read by the counters' watcher.
	expected, missing atomic.Uint64
}

// newStackRows counts the stack rows of what is written to sink, for stacks captured in
// mode.
func newStackRows(sink sampler.Sink, mode bpf.StackMode) *stackRows {
	return &stackRows{Sink: sink, captured: mode.States()}
}

func (r *stackRows) Write(tick time.Time, rows []state.Sample) error {
	var expected, missing uint64
	for i := range rows {
		if rows[i].Seeded || !r.isCaptured(rows[i].State) {
			continue
		}
		expected++
		if rows[i].KernelStack == nil {
			missing++
		}
	}
	r.expected.Add(expected)
	r.missing.Add(missing)
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

// verdict is what one read of the counts deserves.
type verdict struct {
	// newLost are the stacks lost since the previous read: worth a debug line.
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

// watchCounters reads the kernel side's lost-stack count every countersEvery until ctx
// ends, and logs what the losses deserve; entries is the stack map's size.
func watchCounters(ctx context.Context, t *bpf.Tracker, rows *stackRows, entries uint32, log *logrus.Entry) {
	losses := &stackLosses{entries: entries}
	ticker := time.NewTicker(countersEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			c, err := t.Counters()
			if err != nil {
				log.WithError(err).Debug("cannot read the kernel side's counters")
				continue
			}
			v := losses.read(now, stackCounts{lost: c.LostStacks, expected: rows.expected.Load(), missing: rows.missing.Load()})
			losses.report(v, log)
		}
	}
}
