// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// row is a row of process with us microseconds on CPU and the rest of a second asleep.
func row(process string, us int64) state.Sample {
	return state.Sample{Process: process, StateTimeUs: [state.TimedStates]int64{state.OnCPU: us, state.Sleeping: 1_000_000 - us}}
}

// seconds sums the snapshot by process, over every state.
func seconds(a *activity) map[string]float64 {
	by := map[string]float64{}
	for _, p := range a.snapshot() {
		for _, s := range p.seconds {
			by[p.process] += s
		}
	}
	return by
}

// TestActivityKeepsTopProcessesAndLosesNoTime: with room for two processes, no more than
// two (and other) are ever shown; a minute in, the two most active of that minute are;
// and every row's time is in some series: what the series shown grew by from one tick to
// the next (from 0 for one that started) is the time of the tick's rows.
func TestActivityKeepsTopProcessesAndLosesNoTime(t *testing.T) {
	a := newActivity(2)
	start := time.Unix(1_800_000_000, 0)
	before := map[string]float64{}
	for i := range 90 {
		tick := start.Add(time.Duration(i) * time.Second)
		// The idle ones come first, and take the free labels until the first ranking.
		rows := []state.Sample{row("idle1", 1), row("idle2", 2), row("busy", 900_000), row("busier", 990_000), row("", 500_000)}
		if i%2 == 0 {
			rows = append(rows, row(Other, 400_000)) // a process named like the bucket
		}
		a.add(tick, rows)
		by := seconds(a)
		if len(by) > 3 {
			t.Fatalf("tick %d: %d processes shown, want at most 2 and other: %v", i, len(by), by)
		}
		var grew float64
		for name, s := range by {
			grew += s - before[name]
		}
		if diff := grew - float64(len(rows)); diff > 1e-6 || diff < -1e-6 {
			t.Fatalf("tick %d: the series grew by %.6f thread-seconds, want %d (every row's)", i, grew, len(rows))
		}
		before = by
		switch {
		case i < 60 && (by["idle1"] == 0 || by["busy"] != 0):
			t.Fatalf("tick %d: before the first ranking the first processes seen keep the labels: %v", i, by)
		case i >= 60 && (by["busy"] == 0 || by["busier"] == 0 || by["idle1"] != 0 || by["idle2"] != 0):
			t.Fatalf("tick %d: after the first ranking the busiest two have the labels: %v", i, by)
		}
	}
	// After the ranking, busy's series started anew: 30 ticks of it.
	if by := seconds(a); by["busy"] != 30 {
		t.Errorf("busy shows %v thread-seconds, want the 30 since its label was given", by["busy"])
	}
}

// TestActivitySkipsSeededRows: a seeded row has no times (-1): it adds nothing.
func TestActivitySkipsSeededRows(t *testing.T) {
	a := newActivity(5)
	seeded := state.Sample{Process: "p", Seeded: true, StateTimeUs: [state.TimedStates]int64{-1, -1, -1, -1, -1}}
	a.add(time.Unix(1, 0), []state.Sample{seeded})
	if by := seconds(a); by["p"] != 0 || by[Other] != 0 {
		t.Errorf("a seeded row added thread-seconds: %v", by)
	}
}

// TestActivityCountsActiveSessionsOnly: a row counts as an active session when its thread
// is on CPU, runnable or in D at the tick, or inside a span whatever its state; a thread
// asleep outside a span, and an exited thread's last row, add their time but no session.
func TestActivityCountsActiveSessionsOnly(t *testing.T) {
	a := newActivity(10)
	inSpan := func(r state.Sample) state.Sample { r.Span = "lock_wait"; return r }
	of := func(process string, st state.State) state.Sample {
		r := row(process, 0)
		r.State = st
		return r
	}
	for i := range 10 {
		a.add(time.Unix(1_800_000_000+int64(i), 0), []state.Sample{
			of("spin", state.OnCPU), of("spin", state.Runnable), of("db", state.Uninterruptible),
			of("bash", state.Sleeping), // asleep outside a span: no session
			inSpan(of("postgres", state.Sleeping)), inSpan(of("postgres", state.Stopped)),
			inSpan(of("postgres", state.Dead)), of("cc1", state.Dead), // exited: no session
		})
	}
	want := map[string][schema.SessionKinds]int64{
		"spin":     {schema.SessionOnCPU: 10, schema.SessionRunnable: 10},
		"db":       {schema.SessionUninterruptible: 10},
		"bash":     {},
		"postgres": {schema.SessionSleepingInSpan: 10, schema.SessionStoppedInSpan: 10},
		"cc1":      {},
		Other:      {},
	}
	var total int64
	for _, p := range a.snapshot() {
		if p.sessions != want[p.process] {
			t.Errorf("%s: sessions %v, want %v", p.process, p.sessions, want[p.process])
		}
		for _, n := range p.sessions {
			total += n
		}
	}
	// 5 active sessions a tick over 10 ticks: 5 average active threads, of 8 rows a tick.
	if total != 50 {
		t.Errorf("%d active sessions in all, want 50", total)
	}
	if by := seconds(a); by["bash"] != 10 {
		t.Errorf("the sleeper's time: %v thread-seconds, want its 10 (time counts, sessions do not)", by["bash"])
	}
}
