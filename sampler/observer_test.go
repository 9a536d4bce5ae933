// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
)

// recordingObserver keeps what it is told.
type recordingObserver struct {
	rows    int
	reports []TickReport
}

func (o *recordingObserver) Rows(_ time.Time, rows []state.Sample) { o.rows += len(rows) }
func (o *recordingObserver) Ticked(r TickReport)                   { o.reports = append(o.reports, r) }

// TestObserverSeesEveryRowAndTheSlotsInUse: the observer is told of the rows the sink
// gets, and of the threads holding a record, which an exit gives back.
func TestObserverSeesEveryRowAndTheSlotsInUse(t *testing.T) {
	r := newRig(t, Filter{})
	obs := &recordingObserver{}
	r.s.cfg.Observer = obs
	r.src.recs[1] = &state.Thread{Tid: 10, Pid: 10, State: state.OnCPU, SinceNs: 99 * sec, StartNs: 1}
	r.src.recs[2] = &state.Thread{Tid: 11, Pid: 10, State: state.OnCPU, SinceNs: 99 * sec, StartNs: 1}
	r.src.recs[3] = sleeper(12, 50*sec)
	r.tick(t, 100*sec)
	r.src.recs[2] = &state.Thread{Tid: 11, Pid: 10, State: state.Dead, SinceNs: 100*sec + 1, StartNs: 1,
		StateNs: [state.TimedStates]uint64{state.OnCPU: 1}}
	r.tick(t, 101*sec)

	if len(obs.reports) != 2 {
		t.Fatalf("%d tick reports, want 2", len(obs.reports))
	}
	if got := [2]int{obs.reports[0].Tracked, obs.reports[1].Tracked}; got != [2]int{3, 2} {
		t.Errorf("threads holding a record after each tick: %v, want [3 2] (the exited thread's slot is given back)", got)
	}
	last := obs.reports[1]
	if last.Stats.Ticks != 2 || int(last.Stats.Rows) != obs.rows {
		t.Errorf("last report %+v, after %d rows observed: want 2 ticks and every row", last.Stats, obs.rows)
	}
	sunk := 0
	for _, tick := range r.sink.ticks {
		sunk += len(tick)
	}
	if obs.rows != sunk || sunk == 0 {
		t.Errorf("observer saw %d rows, the sink got %d", obs.rows, sunk)
	}
}
