// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// tick is one tick's rows by tid, with the schedstat of watched threads read right after.
type tick struct {
	wall      time.Time
	rows      map[int32]state.Sample
	schedstat map[int32][2]uint64
}

// recorder is a sink that keeps every tick.
type recorder struct {
	t     *testing.T
	mu    sync.Mutex
	watch []int
	ticks []tick
}

// Write keeps a tick's rows; a tick with many rows comes in several batches.
func (r *recorder) Write(wall time.Time, rows []state.Sample) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.ticks); n == 0 || !r.ticks[n-1].wall.Equal(wall) {
		tk := tick{wall: wall, rows: map[int32]state.Sample{}, schedstat: map[int32][2]uint64{}}
		for _, tid := range r.watch {
			onCPU, runDelay := workload.Schedstat(r.t, tid)
			tk.schedstat[int32(tid)] = [2]uint64{onCPU, runDelay}
		}
		r.ticks = append(r.ticks, tk)
	}
	tk := r.ticks[len(r.ticks)-1]
	for _, row := range rows {
		tk.rows[row.Tid] = row
	}
	return nil
}

// start returns a seeded sampler on the real kernel side, recording every tick.
func start(t *testing.T, f sampler.Filter, interval time.Duration, watch ...int) (*sampler.Sampler, *recorder) {
	t.Helper()
	return startWith(t, bpf.Config{}, f, interval, watch...)
}

// startWith is start with the kernel side configured by cfg.
func startWith(t *testing.T, cfg bpf.Config, f sampler.Filter, interval time.Duration, watch ...int) (*sampler.Sampler, *recorder) {
	t.Helper()
	privileged.Require(t)
	tr, err := bpf.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	// As the daemon does: a kernel older than 6.2 has the tcp_ columns from sock_diag.
	var tcpSource sampler.TCPSource
	tcp, err := bpf.OpenTCPSockets()
	switch {
	case err == nil:
		tcpSource = tcp
		t.Cleanup(func() { tcp.Close() })
	case !errors.Is(err, bpf.ErrNoTCPSockets):
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	rec := &recorder{t: t, watch: watch}
	s, err := sampler.New(sampler.Config{
		Interval: interval, Filter: f, Self: -1, Mono: bpf.Now, Wall: time.Now,
		Stacks: tr, TCP: tcpSource, Log: logrus.NewEntry(log),
	}, tr, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Seed(); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

// run samples with the real kernel side at interval for d, as the daemon does.
func run(t *testing.T, f sampler.Filter, interval, d time.Duration, watch ...int) []tick {
	t.Helper()
	s, rec := start(t, f, interval, watch...)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return rec.ticks
}

// TestSpinnerRowsMatchSchedstat ticks by hand, each tick at the moment it is taken, so
// that the schedstat read right after it describes the same instant: Run labels a tick
// with its aligned boundary, which on a loaded machine can be well before schedstat's read.
// The spinner has a CPU to itself: on the test's CPU, a tick would preempt it to run.
func TestSpinnerRowsMatchSchedstat(t *testing.T) {
	spin := workload.SpinnerProcess(t)
	workload.Apart(t, spin)
	s, rec := start(t, sampler.Filter{}, 50*time.Millisecond, spin)
	stealBefore := workload.StealUs(t)
	// The spinner's CPU time at each tick's instant, read just before the tick takes it:
	// the rows cover the time between those instants, however long a tick then takes to
	// read and write (the first, with every cache cold, can take a good part of a second
	// on a busy machine).
	var at []uint64
	for range 60 {
		onCPU, _ := workload.Schedstat(t, spin)
		at = append(at, onCPU)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	steal := float64(workload.StealUs(t) - stealBefore)
	ticks := rec.ticks
	if len(ticks) != len(at) {
		t.Fatalf("%d ticks taken, %d written", len(at), len(ticks))
	}
	tid := int32(spin)
	// Count from the first tick at which the kernel side had a record: before a thread hits
	// a probe (a shell loop alone on a CPU may not for a while), it is only seeded.
	k := 0
	for k < len(ticks)-10 {
		if row, ok := ticks[k].rows[tid]; ok && !row.Seeded {
			break
		}
		k++
	}
	ticks, at = ticks[k:], at[k:]
	var onCPUTicks int
	var sumUs int64
	for _, tk := range ticks[1:] {
		row, ok := tk.rows[tid]
		if ok && row.State == state.OnCPU {
			onCPUTicks++
		}
		sumUs += row.StateTimeUs[state.OnCPU]
	}
	want := float64(at[len(at)-1]-at[0]) / 1000
	share := float64(onCPUTicks) / float64(len(ticks)-1)
	t.Logf("%d ticks, spinner on CPU in %.1f%%; on_cpu_us sum %d, schedstat %.0f us, steal %.0f us",
		len(ticks), 100*share, sumUs, want, steal)
	if share < 0.95 {
		t.Errorf("spinner on CPU in %.1f%% of ticks, want >= 95%%", 100*share)
	}
	// on_cpu_us is the kernel's count, schedstat's: they agree but for the stretch in
	// progress at either end.
	if got := float64(sumUs); got < want*0.98 || got > want*1.02 {
		t.Errorf("on_cpu_us adds up to %.0f, schedstat says %.0f (and %.0f us was stolen): more than 2%% apart", got, want, steal)
	}
}

func TestThreadsFromBeforeStartAreInFirstTick(t *testing.T) {
	sl := workload.Sleeper(t)
	rd, _ := workload.PipeReader(t)
	time.Sleep(50 * time.Millisecond) // both are in their syscalls
	ticks := run(t, sampler.Filter{All: true}, time.Second, 100*time.Millisecond)
	first := ticks[0].rows
	for tid, want := range map[int]string{sl.Tid: "nanosleep", rd.Tid: "read"} {
		row, ok := first[int32(tid)]
		if !ok {
			t.Errorf("thread %d (in %s since before start) is not in the first tick", tid, want)
			continue
		}
		if row.Syscall != want || row.State != state.Sleeping {
			t.Errorf("thread %d: state %v syscall %q, want sleeping in %s", tid, row.State, row.Syscall, want)
		}
	}
	if row := first[int32(rd.Tid)]; !row.Seeded || row.Wchan == "" {
		t.Errorf("the blocked reader, never seen by a probe, should be seeded with a wchan: %+v", row)
	}
}

func TestOversubscribedRunnableIsHalfOfWall(t *testing.T) {
	var pids []int
	for range 2 * runtime.NumCPU() {
		pids = append(pids, workload.SpinnerProcess(t))
	}
	ticks := run(t, sampler.Filter{}, 100*time.Millisecond, 2*time.Second, pids...)
	for _, pid := range pids {
		tid := int32(pid)
		// From the second tick: the first, with every cache cold, may take long enough to
		// write that the schedstat read after it is well past its instant.
		var runnable, wall int64
		for _, tk := range ticks[2:] {
			row := tk.rows[tid]
			runnable += row.StateTimeUs[state.Runnable]
			for _, us := range row.StateTimeUs {
				wall += us
			}
		}
		first, last := ticks[1].schedstat[tid], ticks[len(ticks)-1].schedstat[tid]
		ran, delay := float64(last[0]-first[0])/1000, float64(last[1]-first[1])/1000
		share := float64(runnable) / float64(wall)
		t.Logf("spinner %d: runnable %d us of %d (schedstat: ran %.0f us, run_delay %.0f us), %.1f%% of its time",
			pid, runnable, wall, ran, delay, 100*share)
		// A spinner never sleeps: what the kernel does not count as its CPU time, it spent
		// waiting for a CPU. That is at least the kernel's run_delay, and more on a busy
		// machine: when a wakeup preempts the spinner, the scheduler charges the woken
		// thread from before the switch, and counts that time in neither of the spinner's.
		if got, want := float64(runnable), float64(wall)-ran; got < want*0.95 || got > want*1.05 {
			t.Errorf("spinner %d: runnable_us adds up to %.0f, its wall time less its schedstat CPU time %.0f: more than 5%% apart",
				pid, got, want)
		}
		if got := float64(runnable); got < delay*0.95 {
			t.Errorf("spinner %d: runnable_us adds up to %.0f, less than its schedstat run_delay %.0f", pid, got, delay)
		}
		// Twice as many spinners as CPUs: each waits about half the time (more if the
		// machine has other work).
		if share < 0.35 || share > 0.8 {
			t.Errorf("spinner %d: runnable %.1f%% of wall time, want ~50%%", pid, 100*share)
		}
	}
}

func TestShortBurstsAreNeverMissed(t *testing.T) {
	burst := workload.Burster(t, 20*time.Millisecond, time.Second)
	ticks := run(t, sampler.Filter{}, time.Second, 3500*time.Millisecond)
	// The first tick is taken at start and the second at the next whole second, maybe
	// before any burst: from the third on, every tick follows a full period.
	for i, tk := range ticks[2:] {
		row, ok := tk.rows[int32(burst.Tid)]
		if !ok || row.StateTimeUs[state.OnCPU] == 0 {
			t.Errorf("tick %d: the thread that runs 20 ms a second, asleep at the tick, has no row with CPU time: %+v", i+2, row)
		}
		if ok && row.State != state.Sleeping {
			t.Logf("tick %d: burster caught %v", i+2, row.State)
		}
	}
}
