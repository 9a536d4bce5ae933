// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// The checks on recordings made up to break one invariant or another: each must be named,
// and no other, so that a failure of the whole-machine test points at the right one.

const (
	t0    = int64(1_800_000_000_000_000) // µs
	tick1 = t0 + 100_000
	tick2 = t0 + 200_000
)

// spinnerAndSleeper is a consistent recording: thread 1 on CPU 0 all the time, thread 2
// asleep, at three ticks.
func spinnerAndSleeper() *recording {
	rec := &recording{ticks: []int64{t0, tick1, tick2}}
	for _, tick := range rec.ticks {
		rec.rows = append(rec.rows,
			row{tick: tick, pid: 1, tid: 1, state: "on_cpu", cpu: 0, timed: true, times: [5]int64{100_000, 0, 0, 0, 0}},
			row{tick: tick, pid: 2, tid: 2, state: "sleeping", cpu: 1, timed: true, times: [5]int64{0, 0, 100_000, 0, 0}})
	}
	return rec
}

// schedstat of the consistent recording at t0 and tick2.
func spinnerAndSleeperSchedstat() (cpuSnapshot, cpuSnapshot) {
	at := func(tick int64, spun time.Duration) cpuSnapshot {
		return cpuSnapshot{at: time.UnixMicro(tick), threads: map[int]threadCPU{
			1: {pid: 1, start: 7, onCPU: spun},
			2: {pid: 2, start: 7},
		}}
	}
	return at(t0, time.Second), at(tick2, time.Second+200*time.Millisecond)
}

// rowOf finds the row of tid at tick.
func rowOf(rec *recording, tick int64, tid int) *row {
	for i := range rec.rows {
		if rec.rows[i].tick == tick && rec.rows[i].tid == tid {
			return &rec.rows[i]
		}
	}
	panic("no such row")
}

func TestChecks(t *testing.T) {
	cases := []struct {
		name   string
		cpus   int
		hidden bool // threads 1 and 2 are hidden from task iterators
		change func(*recording)
		want   []invariant
	}{
		{"consistent", 2, false, func(*recording) {}, nil},
		{"two threads on one CPU", 2, false, func(rec *recording) {
			r := rowOf(rec, tick2, 2)
			r.state, r.cpu = "on_cpu", 0
		}, []invariant{cpusAtTick, stateShares}},
		{"more threads on CPU than CPUs", 1, false, func(rec *recording) {
			rowOf(rec, tick1, 2).state = "on_cpu"
		}, []invariant{cpusAtTick, stateShares}},
		{"more CPU time than CPUs", 1, false, func(rec *recording) {
			rowOf(rec, tick1, 2).times = [5]int64{2_000, 0, 98_000, 0, 0}
		}, []invariant{cpuTimeAtTick}},
		{"a sleeper credited with CPU", 2, false, func(rec *recording) {
			rowOf(rec, tick2, 2).times = [5]int64{50_000, 0, 50_000, 0, 0}
		}, []invariant{schedstatCPU, stateShares}},
		{"a thread missing at a tick", 2, false, func(rec *recording) {
			rec.rows = slices.DeleteFunc(rec.rows, func(r row) bool { return r.tick == tick1 && r.tid == 2 })
		}, []invariant{schedstatCPU}},
		{"a hidden thread missing at a tick", 2, true, func(rec *recording) {
			rec.rows = slices.DeleteFunc(rec.rows, func(r row) bool { return r.tick == tick1 && r.tid == 2 })
		}, []invariant{schedstatCPU}},
		{"a sleeper never read", 2, false, func(rec *recording) {
			rec.rows = slices.DeleteFunc(rec.rows, func(r row) bool { return r.tid == 2 })
		}, []invariant{schedstatCPU}},
		{"a hidden sleeper never read", 2, true, func(rec *recording) {
			rec.rows = slices.DeleteFunc(rec.rows, func(r row) bool { return r.tid == 2 })
		}, nil},
		{"a hidden spinner never read", 2, true, func(rec *recording) { // its time is logged
			rec.rows = slices.DeleteFunc(rec.rows, func(r row) bool { return r.tid == 1 })
		}, nil},
		{"times short of the interval", 2, false, func(rec *recording) {
			rowOf(rec, tick1, 2).times = [5]int64{0, 0, 95_000, 0, 0}
		}, []invariant{timesAddUp}},
		{"a row at a tick never taken", 2, false, func(rec *recording) {
			rec.rows = append(rec.rows, row{tick: tick1 + 50_000, pid: 3, tid: 3, state: "sleeping", timed: true})
		}, []invariant{timesAddUp}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := spinnerAndSleeper()
			c.change(rec)
			ix := newIndex(rec)
			m := machine{cpus: c.cpus}
			if c.hidden {
				m.hidden = map[int]bool{1: true, 2: true}
			}
			v := violations{}
			checkCPUsAtTick(ix, m, v)
			checkCPUTimeAtTick(ix, m, v)
			t1, t2 := spinnerAndSleeperSchedstat()
			checkSchedstat(ix, m, t1, t2, v)
			checkStateShares(ix, v)
			checkTimesAddUp(ix, v)
			if got := slices.Sorted(maps.Keys(v)); !slices.Equal(got, c.want) {
				t.Errorf("broken invariants %v, want %v:\n%s", got, c.want, v.summary())
			}
		})
	}
}
