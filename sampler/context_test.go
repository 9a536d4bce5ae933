// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestThreadInChildCgroupShowsIt moves a process that keeps waking up into a new cgroup
// while it is being sampled, and expects its rows to name that cgroup from then on: its
// process context, read once before the move, no longer says where it is.
func TestThreadInChildCgroupShowsIt(t *testing.T) {
	privileged.Require(t)
	cmd := exec.Command("sh", "-c", "while :; do sleep 0.01; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	pid := int32(cmd.Process.Pid)
	s, rec := start(t, sampler.Filter{All: true, Pids: []int32{pid}}, 100*time.Millisecond)
	tick := func() state.Sample {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		return rec.ticks[len(rec.ticks)-1].rows[pid]
	}
	before := tick()
	want := workload.InCgroup(t, sampler.Cgroup2Mount("/proc"), int(pid))
	if before.Cgroup == want || before.Cgroup == "" {
		t.Fatalf("before the move the shell has cgroup %q, want its original one", before.Cgroup)
	}
	var after state.Sample
	for range 5 {
		after = tick()
	}
	if after.Cgroup != want {
		t.Errorf("the shell moved from %s into %s has cgroup %q: %+v", before.Cgroup, want, after.Cgroup, after)
	}
}

// TestBlockedDescriptorsAreNamed expects a thread blocked reading a named pipe to show the
// pipe's path, and one blocked in accept to show the listening socket's address.
func TestBlockedDescriptorsAreNamed(t *testing.T) {
	privileged.Require(t)
	fifo, path := workload.FifoReader(t)
	acc, port := workload.Accepter(t)
	s, rec := start(t, sampler.Filter{All: true}, 100*time.Millisecond)
	want := map[int]string{fifo.Tid: path, acc.Tid: "tcp 127.0.0.1:" + strconv.Itoa(port)}
	var got map[int32]state.Sample
	// A thread may not have reached its syscall at the first tick.
	for range 10 {
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		got = rec.ticks[len(rec.ticks)-1].rows
		if got[int32(fifo.Tid)].FdTarget == path && got[int32(acc.Tid)].FdTarget == want[acc.Tid] {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for tid, w := range want {
		if row := got[int32(tid)]; row.FdTarget != w {
			t.Errorf("thread %d in %s: fd_target %q, want %q", tid, row.Syscall, row.FdTarget, w)
		}
	}
}
