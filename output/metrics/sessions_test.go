// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// TestActiveSessionsAgreeWithTheReport: the same rows, written to the hour files and
// counted by the metrics, give the same active sessions, kind by kind: what
// threadcap_active_sessions_total adds up to is the report's timeline, and over the ticks
// its average active threads.
func TestActiveSessionsAgreeWithTheReport(t *testing.T) {
	start := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	log := logrus.New()
	log.SetOutput(io.Discard)
	var clock atomic.Int64 // read by the writer's background work
	clock.Store(start.UnixNano())
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	a := newActivity(20)
	const ticks = 30
	for i := range ticks {
		now := start.Add(time.Duration(i) * time.Second)
		clock.Store(now.UnixNano())
		var rows []state.Sample
		for j, st := range []state.State{state.OnCPU, state.Runnable, state.Uninterruptible, state.Sleeping, state.Stopped, state.Dead} {
			for _, span := range []string{"", "query"} {
				// Not every combination at every tick, so that kinds differ in count.
				if (i+j)%3 == 0 && span != "" {
					continue
				}
				r := row("p"+st.String(), 1000)
				r.Time, r.Pid, r.Tid, r.State, r.Span = now, int32(100+j), int32(1000+j*2+len(span)), st, span
				rows = append(rows, r)
			}
		}
		a.add(now, rows)
		if err := w.Write(now, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := report.Run(dir, report.Query{Window: report.Window{From: start, To: start.Add(time.Hour)}, Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var fromMetrics [schema.SessionKinds]int64
	var total int64
	for _, p := range a.snapshot() {
		for k, n := range p.sessions {
			fromMetrics[k] += n
			total += n
		}
	}
	if len(r.Timeline) != 1 || r.Ticks != ticks {
		t.Fatalf("%d buckets, %d ticks; want one hour of %d ticks", len(r.Timeline), r.Ticks, ticks)
	}
	for k := range schema.SessionKinds {
		if got := r.Timeline[0].Rows[k]; got != fromMetrics[k] || got == 0 {
			t.Errorf("%s: the report counts %d active sessions, the metrics %d", schema.SessionName(k), got, fromMetrics[k])
		}
	}
	if total != r.Rows || report.Average(total, ticks) != report.Average(r.Rows, r.Ticks) {
		t.Errorf("the metrics count %d active sessions, the report %d (%.2f threads on average)", total, r.Rows, report.Average(r.Rows, r.Ticks))
	}
	t.Logf("%d ticks: %d active sessions (%.2f threads on average), %d inactive rows, %d exited", r.Ticks, r.Rows,
		report.Average(r.Rows, r.Ticks), r.Inactive, r.Exited)
}
