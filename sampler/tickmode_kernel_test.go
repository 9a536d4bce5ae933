// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// The hook-free mode (syscalls tick) through the sampler, as the daemon runs it: a spinner's
// on_cpu_us adds up to its schedstat, a vfork parent is in D for the whole of each row, a
// process that exits has its dead row, every row's times add up to its interval, and a
// user thread's row says its split of sleeping and D is estimated unless schedstats are on.
//
// The spinner is stopped at the first tick and a second before the end, so that the
// schedstat read after those ticks holds what the pass read at them: reads run late on a
// loaded machine, and a running spinner's count grows meanwhile (by tens of ms). What the
// kernel counted beyond a row's interval is in the rows by the last tick.
func TestTickModeRows(t *testing.T) {
	spin := workload.SpinnerProcess(t)
	syscall.Kill(spin, syscall.SIGSTOP)
	defer syscall.Kill(spin, syscall.SIGCONT)
	vfork := workload.VforkParent(t, 10*time.Second)
	// Every thread's row at every tick: the spinner's too while it is stopped.
	s, rec := startWith(t, bpf.Config{Syscalls: bpf.SyscallsTick}, sampler.Filter{All: true}, 50*time.Millisecond, spin)
	short := exec.Command("sleep", "1")
	shortPid := workload.Process(t, short)
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	go func() {
		for ; ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
			rec.mu.Lock()
			n := len(rec.ticks)
			rec.mu.Unlock()
			if n > 0 {
				break
			}
		}
		syscall.Kill(spin, syscall.SIGCONT)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
			syscall.Kill(spin, syscall.SIGSTOP)
		}
	}()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ticks := rec.ticks
	if len(ticks) < 10 {
		t.Fatalf("only %d ticks", len(ticks))
	}
	var spinUs int64
	var dRows, dead int
	seen := map[int32]bool{}
	for i, tk := range ticks {
		for tid, row := range tk.rows {
			if row.Seeded {
				continue
			}
			if int(tid) == shortPid && row.State == state.Dead {
				dead++
			}
			first := !seen[tid]
			seen[tid] = true
			if first || i == 0 {
				continue // a thread's first row covers nothing
			}
			interval := tk.wall.Sub(ticks[i-1].wall).Microseconds()
			var sum int64
			for _, us := range row.StateTimeUs {
				sum += us
			}
			// Whole microseconds of each state's cumulative time: each is off by less
			// than 1 µs, and so is the interval. A row with no time is a thread's first
			// with a new record (a non-leader's exec).
			slack := int64(len(row.StateTimeUs)) + 1
			if row.State != state.Dead && sum != 0 && (sum < interval-slack || sum > interval+slack) {
				t.Errorf("tick %d, thread %d (%s): times %v add up to %d µs, the interval is %d µs",
					i, tid, row.Thread, row.StateTimeUs, sum, interval)
			}
			switch {
			case int(tid) == spin && i > 0:
				spinUs += row.StateTimeUs[state.OnCPU]
			case int(tid) == vfork.Pid:
				dRows++
				if row.State != state.Uninterruptible || row.StateTimeUs[state.Uninterruptible] < interval-2 {
					t.Errorf("tick %d: vfork parent %v, %v µs of %d in D", i, row.State, row.StateTimeUs, interval)
				}
				if row.SplitEstimated == bpf.SchedstatsOn() {
					t.Errorf("tick %d: the vfork parent's row says its split is estimated %v, with schedstats on %v",
						i, row.SplitEstimated, bpf.SchedstatsOn())
				}
			}
		}
	}
	// The spinner's CPU time between the first tick with its record and the last, as
	// schedstat read right after each tick.
	var first int
	for first < len(ticks) && ticks[first].rows[int32(spin)].Tid == 0 {
		first++
	}
	want := float64(ticks[len(ticks)-1].schedstat[int32(spin)][0]-ticks[first].schedstat[int32(spin)][0]) / 1000
	spinUs = 0
	for _, tk := range ticks[first+1:] {
		spinUs += tk.rows[int32(spin)].StateTimeUs[state.OnCPU]
	}
	t.Logf("%d ticks; spinner on_cpu_us %d, schedstat %.0f µs; vfork parent in D in %d rows; short process dead rows: %d",
		len(ticks), spinUs, want, dRows, dead)
	if got := float64(spinUs); got < want*0.98 || got > want*1.02 {
		t.Errorf("spinner's on_cpu_us adds up to %.0f µs, schedstat says %.0f: more than 2%% apart", got, want)
	}
	if dRows < len(ticks)/2 {
		t.Errorf("vfork parent in D in only %d rows of %d ticks", dRows, len(ticks))
	}
	if dead != 1 {
		t.Errorf("process %d that exited has %d dead rows, want 1", shortPid, dead)
	}
}
