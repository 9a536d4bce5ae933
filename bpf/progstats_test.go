// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"testing"
	"time"
)

// TestProgramStatsWhileTheKernelCountsRuns turns kernel.bpf_stats_enabled on for the
// test (as an operator would for the metrics) and back as it was: the programs' runs and
// run time then grow as threads switch.
func TestProgramStatsWhileTheKernelCountsRuns(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	was, err := os.ReadFile(StatsEnabledPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StatsEnabledPath, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(StatsEnabledPath, was, 0o644) })
	if !StatsEnabled() {
		t.Fatalf("StatsEnabled is false with %s set to 1", StatsEnabledPath)
	}
	runsOf := func() map[string]ProgramStats {
		progs, err := tr.ProgramStats()
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]ProgramStats{}
		for _, p := range progs {
			by[p.Name] = p
		}
		return by
	}
	before := runsOf()
	for range 50 {
		time.Sleep(time.Millisecond) // a switch out and in each
	}
	after := runsOf()
	loaded := len(tr.coll.Programs) + len(tr.io.Programs)
	if tr.kasks != nil {
		loaded += len(tr.kasks.coll.Programs)
	}
	if len(after) != loaded {
		t.Errorf("stats of %d programs, %d loaded", len(after), loaded)
	}
	if _, ok := after["on_rq_complete"]; !ok {
		t.Errorf("no stats of the block I/O programs among %v", after)
	}
	sw := "on_switch"
	if _, ok := after[sw]; !ok {
		t.Fatalf("no stats of %s among %v", sw, after)
	}
	if after[sw].Runs < before[sw].Runs+50 || after[sw].Runtime <= before[sw].Runtime {
		t.Errorf("%s: %+v, then %+v after 50 sleeps: want 50 runs more at least, and run time", sw, before[sw], after[sw])
	}
}

// In the hook-free mode the pass is the mode's one program that runs: its runs are
// counted too, one a tick.
func TestProgramStatsOfTheHookFreePass(t *testing.T) {
	tr := openTracker(t, Config{Syscalls: SyscallsTick})
	was, err := os.ReadFile(StatsEnabledPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StatsEnabledPath, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(StatsEnabledPath, was, 0o644) })
	for range 3 {
		tickRead(t, tr, os.Getpid())
	}
	progs, err := tr.ProgramStats()
	if err != nil {
		t.Fatal(err)
	}
	var runs uint64
	for _, p := range progs {
		if p.Name == "walk_tasks" {
			runs = p.Runs
		}
	}
	if runs < 3 {
		t.Errorf("walk_tasks ran %d times in 3 ticks by the kernel's counts: %+v", runs, progs)
	}
}
