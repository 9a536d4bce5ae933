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

// In the hook-free mode a thread's CPU time between a tick and the pass's read of it is in
// the tick's row: the spinner read 50 ms late at t0 has those 50 ms in t0's row, outside
// the window, and its row at tick1 50 ms short. The full mode's check names that; the
// hook-free mode's, with schedstat read a tick after each end too, allows it, and no more.
func TestSchedstatHookFree(t *testing.T) {
	cases := []struct {
		name         string
		hookFree     bool
		tick1, tick2 int64 // the spinner's on_cpu_us at those ticks
		broken       bool
	}{
		{"full mode, read late", false, 50_000, 100_000, true},
		{"hook-free mode, read late", true, 50_000, 100_000, false},
		{"hook-free mode, all the time", true, 100_000, 100_000, false},
		{"hook-free mode, short by more than a tick", true, 0, 60_000, true},
		{"hook-free mode, over by more than a tick", true, 100_000, 100_000 + 130_000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := spinnerAndSleeper()
			rowOf(rec, tick1, 1).times = [5]int64{c.tick1, 100_000 - c.tick1, 0, 0, 0}
			rowOf(rec, tick2, 1).times = [5]int64{c.tick2, max(100_000-c.tick2, 0), 0, 0, 0}
			t1, t2 := spinnerAndSleeperSchedstat()
			t1.next, t2.next = spinnerAndSleeperSchedstatNext()
			v := violations{}
			checkSchedstat(newIndex(rec), machine{cpus: 2, hookFree: c.hookFree}, t1, t2, v)
			if _, got := v[schedstatCPU]; got != c.broken {
				t.Errorf("schedstat check broken %v, want %v:\n%s", got, c.broken, v.summary())
			}
		})
	}
}

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

// schedstat of the consistent recording a tick after t0 and tick2.
func spinnerAndSleeperSchedstatNext() (*cpuSnapshot, *cpuSnapshot) {
	at := func(tick int64, spun time.Duration) *cpuSnapshot {
		return &cpuSnapshot{at: time.UnixMicro(tick), threads: map[int]threadCPU{
			1: {pid: 1, start: 7, onCPU: spun},
			2: {pid: 2, start: 7},
		}}
	}
	return at(tick1, time.Second+100*time.Millisecond), at(tick2+100_000, time.Second+300*time.Millisecond)
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
