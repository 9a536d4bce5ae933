// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"sort"
	"sync"
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// Other is the process label of the time of every process without a label of its own.
const Other = "other"

// rankEvery is how often the processes with a label of their own are chosen again, by
// their activity since the last choice: often enough that a process that becomes the
// busiest is named within a minute, seldom enough that series do not come and go with
// every burst.
const rankEvery = time.Minute

// activity sums the rows' exact state times, the seconds each process's threads spent in
// each state, and counts the rows that are active sessions (schema.Session) by kind: over
// the ticks, the average active threads. Only the top processes by activity have a label of their own (their series
// start when they are chosen and end when they are not); the time of the others goes to
// Other, so that a scrape holds at most top+1 processes, whatever runs on the machine.
type activity struct {
	top int
	// key is what a row counts under: its process (newActivity), or its unit.
	key func(*state.Sample) string

	mu sync.Mutex
	// named are the processes with a label of their own, and their sums since they were
	// chosen.
	named map[string]*processSums
	other processSums
	// active is each process's active µs (on CPU, runnable, uninterruptible) since
	// rankedAt: what the next choice ranks by.
	active   map[string]int64
	rankedAt time.Time
}

func newActivity(top int) *activity {
	return newActivityBy(top, func(r *state.Sample) string { return r.Process })
}

// newActivityBy is newActivity with rows counted under key(row) instead of their process.
func newActivityBy(top int, key func(*state.Sample) string) *activity {
	return &activity{top: top, key: key, named: map[string]*processSums{}, active: map[string]int64{}}
}

// processSums are one process's (or Other's) sums: µs per state, and rows that were
// active sessions per kind.
type processSums struct {
	us       [state.TimedStates]int64
	sessions [schema.SessionKinds]int64
}

// add counts the time and the active sessions of one batch of a tick's rows. A seeded row
// has no times, but its thread is an active session or not like any other's; a dead
// row's times are its thread's last, and it is no active session.
func (a *activity) add(tick time.Time, rows []state.Sample) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rankedAt.IsZero() {
		a.rankedAt = tick
	}
	if tick.Sub(a.rankedAt) >= rankEvery {
		a.rank()
		a.rankedAt = tick
	}
	for i := range rows {
		r := &rows[i]
		name := a.key(r)
		sum := a.seriesOf(name)
		if kind, ok := schema.Session(r.State, r.Span != ""); ok {
			sum.sessions[kind]++
		}
		if r.StateTimeUs[state.OnCPU] < 0 {
			continue // seeded: times unknown
		}
		a.active[name] += r.StateTimeUs[state.OnCPU] + r.StateTimeUs[state.Runnable] + r.StateTimeUs[state.Uninterruptible]
		for st, us := range r.StateTimeUs {
			sum.us[st] += us
		}
	}
}

// seriesOf is where a row of process counts: its own series, one started now while
// fewer than top processes have one, or Other.
func (a *activity) seriesOf(process string) *processSums {
	if s, ok := a.named[process]; ok {
		return s
	}
	if len(a.named) < a.top && ownLabel(process) {
		s := new(processSums)
		a.named[process] = s
		return s
	}
	return &a.other
}

// rank keeps the top processes by activity since the last ranking, most active first;
// the series of the others end, and those of the new ones start. A process that keeps its
// place keeps its series.
func (a *activity) rank() {
	names := make([]string, 0, len(a.active))
	for name := range a.active {
		if ownLabel(name) {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if a.active[names[i]] != a.active[names[j]] {
			return a.active[names[i]] > a.active[names[j]]
		}
		return names[i] < names[j]
	})
	keep := map[string]bool{}
	for _, name := range names[:min(a.top, len(names))] {
		keep[name] = true
	}
	for name := range a.named {
		if !keep[name] {
			delete(a.named, name)
		}
	}
	for name := range keep {
		if a.named[name] == nil {
			a.named[name] = new(processSums)
		}
	}
	clear(a.active)
}

// ownLabel says whether process may have a series of its own: an unknown name (a thread
// gone before its process was read) or one spelt like Other counts in Other.
func ownLabel(process string) bool { return process != "" && process != Other }

// processSeconds is one process's (or Other's) seconds per state, and active sessions per
// kind.
type processSeconds struct {
	process  string
	seconds  [state.TimedStates]float64
	sessions [schema.SessionKinds]int64
}

// snapshot returns the seconds of every named process and of Other.
func (a *activity) snapshot() []processSeconds {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]processSeconds, 0, len(a.named)+1)
	add := func(name string, sums *processSums) {
		p := processSeconds{process: name, sessions: sums.sessions}
		for st, v := range sums.us {
			p.seconds[st] = float64(v) / 1e6
		}
		out = append(out, p)
	}
	for name, us := range a.named {
		add(name, us)
	}
	add(Other, &a.other)
	return out
}
