// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestThreadInChildCgroupShowsIt moves a process that keeps waking up into a new cgroup
// while it is being sampled, and expects its rows to name that cgroup from then on: its
// process context, read once before the move, no longer says where it is.
func TestThreadInChildCgroupShowsIt(t *testing.T) {
	privileged.Require(t)
	pid := int32(workload.Process(t, exec.Command("sh", "-c", "while :; do sleep 0.01; done")))
	s, rec := start(t, sampler.Filter{All: true, Pids: []int32{pid}}, 100*time.Millisecond)
	tick := func() state.Sample {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		return rec.ticks[len(rec.ticks)-1].rows[pid]
	}
	before := tick()
	want := workload.InCgroup(t, procinfo.Cgroup2Mount("/proc"), int(pid))
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

// TestVforkParentWaitsInVfork expects the stack of a vfork parent, in D state until its
// child exits, to run from the vfork syscall into the function that waits for the child.
func TestVforkParentWaitsInVfork(t *testing.T) {
	privileged.Require(t)
	s, rec := startWith(t, bpf.Config{UserStacks: true}, sampler.Filter{}, 100*time.Millisecond)
	// Started after the kernel side, so that its switch-out into D is seen.
	parent := workload.VforkParent(t, 5*time.Second)
	var row state.Sample
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		if row = rec.ticks[len(rec.ticks)-1].rows[int32(parent.Pid)]; row.KernelStack != nil {
			break
		}
	}
	t.Logf("vfork parent: %s in %s, stack %+v, user stack %+v", row.State, row.Wchan, row.KernelStack, row.UserStack)
	if row.State != state.Uninterruptible || row.KernelStack == nil {
		t.Fatalf("vfork parent has no stack in D state: %+v", row)
	}
	frames := strings.Split(row.KernelStack.Frames, ";")
	// wait_for_vfork_done is often inlined into kernel_clone, which then waits itself.
	if w := row.Wchan; w != "wait_for_vfork_done" && w != "kernel_clone" || frames[len(frames)-1] != w {
		t.Errorf("vfork parent waits in %q, want wait_for_vfork_done or kernel_clone, the last frame of %s", w, row.KernelStack.Frames)
	}
	if !strings.Contains(row.KernelStack.Frames, "sys_vfork;") {
		t.Errorf("vfork parent's stack does not go through the vfork syscall: %s", row.KernelStack.Frames)
	}
	// Its user stack is only as deep as frame pointers allow, but the innermost frame, the
	// saved instruction pointer, is always right: libc's vfork.
	if row.UserStack == nil || !strings.HasSuffix(row.UserStack.Frames, "vfork") {
		t.Errorf("vfork parent's user stack does not end in vfork: %+v", row.UserStack)
	}
}

// TestUserStackOfSleepingGoThread captures stacks at every sleep, user stacks included, and
// expects a Go thread blocked reading a pipe to show the Go functions it waits in: Go keeps
// frame pointers, and the test binary its symbol table.
func TestUserStackOfSleepingGoThread(t *testing.T) {
	privileged.Require(t)
	s, rec := startWith(t, bpf.Config{Stacks: bpf.StacksOffCPU, UserStacks: true},
		sampler.Filter{All: true, Pids: []int32{int32(os.Getpid())}}, 100*time.Millisecond)
	// Started after the kernel side, so that its switch-out into the read is seen.
	rd, _ := workload.FifoReader(t)
	var row state.Sample
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		if row = rec.ticks[len(rec.ticks)-1].rows[int32(rd.Tid)]; row.UserStack != nil && row.Syscall == "read" {
			break
		}
	}
	t.Logf("fifo reader: %s in %s, user stack %+v", row.State, row.Wchan, row.UserStack)
	if row.UserStack == nil || !strings.Contains(row.UserStack.Frames, "workload.FifoReader") {
		t.Errorf("a Go thread blocked in read has no user stack through workload.FifoReader: %+v", row)
	}
	if row.KernelStack == nil || row.Wchan == "" {
		t.Errorf("a thread asleep, with stacks captured at every sleep, has no kernel stack: %+v", row)
	}
}

// TestFoldedStacksOfAVforkParent samples a vfork parent into hour files, as the daemon
// does, and expects threadcap report --folded to show it waiting in vfork.
func TestFoldedStacksOfAVforkParent(t *testing.T) {
	privileged.Require(t)
	tr, err := bpf.Open(bpf.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	parent := workload.VforkParent(t, 5*time.Second)
	dir := t.TempDir()
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := sampler.New(sampler.Config{
		Interval: 100 * time.Millisecond, Filter: sampler.Filter{Pids: []int32{int32(parent.Pid)}},
		Self: -1, Mono: bpf.Now, Wall: time.Now, Stacks: tr, Log: logrus.NewEntry(log),
	}, tr, w)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	stacks, _, err := report.Folded(dir, report.Query{Window: report.Window{From: from.Add(-time.Second), To: time.Now().Add(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stacks {
		if strings.HasPrefix(st.Frames, "vfork_parent;") && strings.Contains(st.Frames, "sys_vfork;") {
			return
		}
	}
	t.Errorf("no folded stack of vfork_parent through the vfork syscall in %+v", stacks)
}
