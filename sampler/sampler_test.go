// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// fakeSource holds records by slot, as the kernel side would.
// fakeSource holds each thread as it is at every tick: it has no view of its own to keep.
// Its kernel counts CPU time as the clock does, unless a thread says otherwise (CPUNs).
type fakeSource struct {
	recs  map[uint32]*state.Thread
	freed []uint32
	ticks []uint64 // every instant SetTick named
}

func (f *fakeSource) SetTick(mono uint64) { f.ticks = append(f.ticks, mono) }

func (f *fakeSource) Scan(since, _ uint64, keep func(int32) bool, fn func(uint32, *state.Thread)) {
	for slot := uint32(0); slot < 64; slot++ {
		th, ok := f.recs[slot]
		if !ok {
			continue
		}
		quiet := (th.State == state.Sleeping || th.State == state.Stopped) && th.SinceNs < since
		if since == 0 || !quiet || (keep != nil && keep(th.Tid)) {
			c := *th
			if c.CPUNs == 0 {
				c.CPUNs = c.StateNs[state.OnCPU]
			}
			fn(slot, &c)
		}
	}
}

func (f *fakeSource) Free(slot uint32) error {
	f.freed = append(f.freed, slot)
	delete(f.recs, slot)
	return nil
}

type fakeSink struct{ ticks [][]state.Sample }

func (f *fakeSink) Write(_ time.Time, rows []state.Sample) error {
	f.ticks = append(f.ticks, append([]state.Sample(nil), rows...))
	return nil
}

const sec = uint64(time.Second)

// rig is a sampler on a fake source, with a mono clock the test moves.
type rig struct {
	src  *fakeSource
	sink *fakeSink
	s    *Sampler
	mono uint64
}

func newRig(t *testing.T, f Filter) *rig {
	t.Helper()
	r := &rig{src: &fakeSource{recs: map[uint32]*state.Thread{}}, sink: &fakeSink{}, mono: 100 * sec}
	log := logrus.New()
	log.SetOutput(io.Discard)
	s, err := New(Config{
		Interval: time.Second, Filter: f, ProcRoot: t.TempDir(), Self: 999,
		Mono: func() uint64 { return r.mono }, Wall: func() time.Time { return time.Unix(0, int64(r.mono)) }, Log: logrus.NewEntry(log),
	}, r.src, r.sink)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

// tick advances the clock to mono and samples, returning that tick's rows by tid.
func (r *rig) tick(t *testing.T, mono uint64) map[int32]state.Sample {
	t.Helper()
	r.mono = mono
	if err := r.s.Tick(time.Unix(0, int64(mono))); err != nil {
		t.Fatal(err)
	}
	rows := map[int32]state.Sample{}
	for _, row := range r.sink.ticks[len(r.sink.ticks)-1] {
		rows[row.Tid] = row
	}
	return rows
}

func sleeper(tid int32, since uint64) *state.Thread {
	return &state.Thread{Tid: tid, Pid: tid, State: state.Sleeping, SinceNs: since, StartNs: 1, Syscall: 35}
}

func TestBurstBetweenTicksGetsARow(t *testing.T) {
	r := newRig(t, Filter{})
	r.src.recs[1] = sleeper(10, 50*sec)
	if rows := r.tick(t, 100*sec); len(rows) != 0 {
		t.Fatalf("an idle sleeper got a row: %+v", rows)
	}
	// Between ticks it runs 20 ms and sleeps again: asleep at both ticks.
	th := r.src.recs[1]
	th.StateNs[state.Sleeping] += 100*sec + 500_000_000 - th.SinceNs
	th.StateNs[state.OnCPU] += 20_000_000
	th.SinceNs = 100*sec + 520_000_000
	th.Voluntary++
	rows := r.tick(t, 101*sec)
	row, ok := rows[10]
	if !ok {
		t.Fatal("a thread that ran 20 ms between ticks got no row")
	}
	if row.StateTimeUs[state.OnCPU] != 20_000 {
		t.Errorf("on_cpu_us = %d, want 20000", row.StateTimeUs[state.OnCPU])
	}
	if got := row.StateTimeUs[state.Sleeping] + row.StateTimeUs[state.OnCPU]; got != 1_000_000 {
		t.Errorf("time columns add up to %d us over a 1 s tick", got)
	}
	if row.Voluntary != 1 || row.State != state.Sleeping || row.Syscall != state.SyscallName(35) {
		t.Errorf("row = %+v", row)
	}
	if rows := r.tick(t, 102*sec); len(rows) != 0 {
		t.Errorf("the sleeper got a row at a tick it was idle for: %+v", rows)
	}
}

func TestAllThreadsIncludesSleepers(t *testing.T) {
	r := newRig(t, Filter{All: true})
	r.src.recs[1] = sleeper(10, 50*sec)
	r.tick(t, 100*sec)
	row, ok := r.tick(t, 101*sec)[10]
	if !ok {
		t.Fatal("no row for a sleeper with the all-threads filter")
	}
	if row.StateTimeUs[state.Sleeping] != 1_000_000 || row.StateUs != 51_000_000 {
		t.Errorf("sleeping_us = %d, state_us = %d; want 1000000 and 51000000",
			row.StateTimeUs[state.Sleeping], row.StateUs)
	}
}

// TestManyRowsReachTheSinkInBatches: a tick where thousands of threads ran hands its rows
// over a batch at a time, all with the tick's time, none lost or repeated.
func TestManyRowsReachTheSinkInBatches(t *testing.T) {
	r := newRig(t, Filter{})
	const n = 2*rowBatch + 100
	for tid := int32(1000); tid < 1000+n; tid++ {
		r.s.seeded[tid] = &state.Thread{Tid: tid, Pid: 1000, State: state.Uninterruptible, Seeded: true, Syscall: state.NoSyscall}
	}
	r.tick(t, 100*sec)
	var sizes []int
	seen := map[int32]bool{}
	for _, rows := range r.sink.ticks {
		sizes = append(sizes, len(rows))
		for _, row := range rows {
			if seen[row.Tid] || !row.Time.Equal(time.Unix(0, int64(100*sec))) {
				t.Fatalf("row %+v repeated or at another time", row)
			}
			seen[row.Tid] = true
		}
	}
	if len(seen) != n || len(sizes) != 3 || sizes[0] != rowBatch {
		t.Errorf("%d rows in writes of %v, want %d in writes of at most %d", len(seen), sizes, n, rowBatch)
	}
	if st := r.s.Stats(); st.Rows != n {
		t.Errorf("stats count %d rows, want %d", st.Rows, n)
	}
}

func TestSeededThreadUntilObserved(t *testing.T) {
	r := newRig(t, Filter{All: true})
	r.s.seeded[20] = &state.Thread{Tid: 20, Pid: 20, State: state.Uninterruptible, Seeded: true, Syscall: state.NoSyscall}
	row, ok := r.tick(t, 100*sec)[20]
	if !ok || !row.Seeded || row.StateUs != state.Unknown || row.StateTimeUs[state.OnCPU] != state.Unknown {
		t.Fatalf("seeded row = %+v (present %v)", row, ok)
	}
	r.src.recs[3] = &state.Thread{Tid: 20, Pid: 20, State: state.OnCPU, SinceNs: 100*sec + 1, StartNs: 7}
	row = r.tick(t, 101*sec)[20]
	if row.Seeded || row.State != state.OnCPU {
		t.Errorf("once the kernel side saw it, the row is still seeded: %+v", row)
	}
	if len(r.sink.ticks[1]) != 1 {
		t.Errorf("thread 20 has %d rows in one tick", len(r.sink.ticks[1]))
	}
}

func TestExitedThreadGetsLastRowAndItsSlotBack(t *testing.T) {
	r := newRig(t, Filter{})
	r.src.recs[4] = &state.Thread{Tid: 30, Pid: 30, State: state.OnCPU, SinceNs: 99 * sec, StartNs: 3}
	r.tick(t, 100*sec)
	r.src.recs[4] = &state.Thread{Tid: 30, Pid: 30, State: state.Dead, SinceNs: 100*sec + 300_000_000,
		StateNs: [state.TimedStates]uint64{state.OnCPU: 1_300_000_000}, StartNs: 3}
	row, ok := r.tick(t, 101*sec)[30]
	if !ok || row.State != state.Dead || row.StateTimeUs[state.OnCPU] != 300_000 {
		t.Errorf("last row of an exited thread = %+v (present %v)", row, ok)
	}
	if len(r.src.freed) != 1 || r.src.freed[0] != 4 {
		t.Errorf("freed slots %v, want [4]", r.src.freed)
	}
}

// A thread whose last stretch was all asleep still shows its exit, with the active ones only.
func TestExitedSleeperGetsLastRow(t *testing.T) {
	r := newRig(t, Filter{})
	r.src.recs[4] = &state.Thread{Tid: 30, Pid: 30, State: state.Sleeping, SinceNs: 99 * sec, StartNs: 3}
	r.tick(t, 100*sec)
	r.src.recs[4] = &state.Thread{Tid: 30, Pid: 30, State: state.Dead, SinceNs: 100 * sec,
		StateNs: [state.TimedStates]uint64{state.Sleeping: 2 * sec}, StartNs: 3}
	row, ok := r.tick(t, 101*sec)[30]
	if !ok || row.State != state.Dead || row.StateTimeUs[state.Sleeping] != 1_000_000 {
		t.Errorf("last row of an exited sleeper = %+v (present %v)", row, ok)
	}
}

func TestSelfAndPidFilter(t *testing.T) {
	r := newRig(t, Filter{Pids: []int32{40}})
	r.src.recs[1] = &state.Thread{Tid: 999, Pid: 999, State: state.OnCPU, SinceNs: 1, StartNs: 1}
	r.src.recs[2] = &state.Thread{Tid: 40, Pid: 40, State: state.OnCPU, SinceNs: 1, StartNs: 1}
	r.src.recs[3] = &state.Thread{Tid: 41, Pid: 41, State: state.OnCPU, SinceNs: 1, StartNs: 1}
	rows := r.tick(t, 100*sec)
	if _, ok := rows[40]; !ok || len(rows) != 1 {
		t.Errorf("rows for tids %v, want only 40", keys(rows))
	}
}

func keys(m map[int32]state.Sample) []int32 {
	var k []int32
	for tid := range m {
		k = append(k, tid)
	}
	return k
}

func TestPassedInstantIsNotArmed(t *testing.T) {
	r := newRig(t, Filter{})
	r.mono = 100*sec + 1
	if r.s.arm(time.Unix(0, int64(100*sec))) {
		t.Error("an instant already passed was armed")
	}
	if len(r.src.ticks) != 0 || r.s.armed != (armedTick{}) {
		t.Errorf("told the kernel side of ticks %v, armed %+v", r.src.ticks, r.s.armed)
	}
	if !r.s.arm(time.Unix(0, int64(101*sec))) || len(r.src.ticks) != 1 || r.src.ticks[0] != 101*sec {
		t.Errorf("an instant to come: kernel side told %v, want [%d]", r.src.ticks, 101*sec)
	}
}

func TestTickIsArmedBeforeItComes(t *testing.T) {
	r := newRig(t, Filter{})
	r.mono = 99*sec + 500_000_000
	tick := time.Unix(0, int64(100*sec))
	r.s.arm(tick)
	// Preempted 2 ms after the tick instant, and read 3 ms after it: a record without a
	// view of the tick shows the state it left at since.
	r.src.recs[1] = &state.Thread{Tid: 50, Pid: 50, State: state.Runnable, PrevState: state.OnCPU,
		SinceNs: 100*sec + 2_000_000, StartNs: 1}
	r.mono = 100*sec + 3_000_000
	if err := r.s.Tick(tick); err != nil {
		t.Fatal(err)
	}
	if len(r.src.ticks) != 1 || r.src.ticks[0] != 100*sec {
		t.Errorf("kernel side told of ticks %v, want [%d] before the tick", r.src.ticks, 100*sec)
	}
	row := r.sink.ticks[0][0]
	if row.State != state.OnCPU || row.StateUs != state.Unknown {
		t.Errorf("state at the tick = %v (state_us %d), want on_cpu (unknown)", row.State, row.StateUs)
	}
}

func TestUnarmedTickIsTakenWhenCalled(t *testing.T) {
	r := newRig(t, Filter{})
	r.src.recs[1] = &state.Thread{Tid: 50, Pid: 50, State: state.OnCPU, SinceNs: 100 * sec, StartNs: 1}
	r.tick(t, 101*sec)
	// Born after the instant the kernel side was given: not a thread of this tick.
	r.src.recs[2] = &state.Thread{Tid: 51, Pid: 51, State: state.OnCPU, SinceNs: 102 * sec, StartNs: 102 * sec}
	rows := r.tick(t, 101*sec+1)
	if len(r.src.ticks) != 2 || r.src.ticks[0] != 101*sec || r.src.ticks[1] != 101*sec+1 {
		t.Errorf("kernel side told of ticks %v, want the instants Tick was called at", r.src.ticks)
	}
	if _, ok := rows[51]; ok || len(rows) != 1 {
		t.Errorf("rows for tids %v, want only 50", keys(rows))
	}
}

func TestNextTickIsAligned(t *testing.T) {
	for _, tc := range []struct {
		now      string
		interval time.Duration
		want     string
	}{
		{"14:03:07.250", time.Second, "14:03:08.000"},
		{"14:03:07.000", time.Second, "14:03:08.000"},
		{"14:03:07.999", 50 * time.Millisecond, "14:03:08.000"},
		{"14:03:07.010", 50 * time.Millisecond, "14:03:07.050"},
	} {
		now, _ := time.Parse("15:04:05.000", tc.now)
		if got := nextTick(now, tc.interval).Format("15:04:05.000"); got != tc.want {
			t.Errorf("nextTick(%s, %v) = %s, want %s", tc.now, tc.interval, got, tc.want)
		}
	}
}

func TestRowsShowTheKernelsCPUTime(t *testing.T) {
	const ms = 1_000_000
	r := newRig(t, Filter{All: true})
	// Woken at 100.2 s, on CPU from 100.3 s to 100.5 s as the switches tell; the kernel
	// charged it 250 ms, from before its wakeup as far as the switches go.
	woken := &state.Thread{Tid: 60, Pid: 60, State: state.Sleeping, SinceNs: 99 * sec, StartNs: 1}
	r.src.recs[1] = woken
	r.tick(t, 100*sec)
	*woken = state.Thread{Tid: 60, Pid: 60, State: state.Sleeping, SinceNs: 100*sec + 500*ms, StartNs: 1,
		StateNs: [state.TimedStates]uint64{200 * ms, 100 * ms, 1200 * ms}, CPUNs: 250 * ms}
	row := r.tick(t, 101*sec)[60]
	want := [state.TimedStates]int64{250_000, 50_000, 700_000, 0, 0}
	if row.StateTimeUs != want {
		t.Errorf("times = %v, want %v: the kernel's 250 ms on CPU, taken from runnable", row.StateTimeUs, want)
	}
}

func TestReconcileCPUCarriesWhatARowCannotShow(t *testing.T) {
	for _, tc := range []struct {
		name          string
		times         [state.TimedStates]int64
		kernel, carry int64
		want          [state.TimedStates]int64
		wantCarry     int64
	}{
		{"agree", [5]int64{100, 0, 900}, 100, 0, [5]int64{100, 0, 900}, 0},
		{"more, from runnable", [5]int64{100, 50, 850}, 130, 0, [5]int64{130, 20, 850}, 0},
		{"more, then from sleeping", [5]int64{100, 10, 890}, 130, 0, [5]int64{130, 0, 870}, 0},
		{"less, to runnable", [5]int64{100, 0, 900}, 90, 0, [5]int64{90, 10, 900}, 0},
		{"more than the row holds", [5]int64{100, 0, 0}, 150, 0, [5]int64{100, 0, 0}, 50},
		{"carried in", [5]int64{100, 50, 850}, 100, 20, [5]int64{120, 30, 850}, 0},
		{"less than the row shows", [5]int64{10, 0, 990}, 0, -30, [5]int64{0, 10, 990}, -30},
	} {
		got := tc.times
		carry := reconcileCPU(&got, tc.kernel, tc.carry)
		if got != tc.want || carry != tc.wantCarry {
			t.Errorf("%s: times %v carry %d, want %v carry %d", tc.name, got, carry, tc.want, tc.wantCarry)
		}
		var sumIn, sumOut int64
		for i := range got {
			sumIn, sumOut = sumIn+tc.times[i], sumOut+got[i]
		}
		if sumIn != sumOut {
			t.Errorf("%s: times add up to %d, were %d", tc.name, sumOut, sumIn)
		}
	}
}

func TestFitIntervalKeepsRowsAddingUp(t *testing.T) {
	for _, tc := range []struct {
		raw, want [state.TimedStates]int64
	}{
		{[5]int64{10, 20, 70}, [5]int64{10, 20, 70}},
		{[5]int64{-3, 0, 103}, [5]int64{0, 0, 100}},
		{[5]int64{40, -10, 30, 40}, [5]int64{30, 0, 30, 40}},
	} {
		got := fitInterval(tc.raw)
		if got != tc.want {
			t.Errorf("fitInterval(%v) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
