// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// TestStacksOfUninterruptibleThreads expects a stack in the record of a thread in D state
// when stacks are walked at the switch-out (kernels before 6.2, or with user stacks),
// user-space frames too when asked for, and none with stacks off.
func TestStacksOfUninterruptibleThreads(t *testing.T) {
	for _, tt := range []struct {
		name        string
		cfg         Config
		kernel, usr bool
	}{
		{"at switch-out", Config{}, true, false},
		{"user", Config{UserStacks: true, StackEntries: 1024}, true, true},
		{"off", Config{Stacks: StacksOff, UserStacks: true}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			walkAtSwitchOut = true
			defer func() { walkAtSwitchOut = false }()
			// A stack whose bucket in the stack map is taken is lost, and counted: the
			// thread's record then holds none. That is the documented behaviour, not a
			// fault, so a counted loss gets another vfork parent; an uncounted one fails.
			for attempt := 1; ; attempt++ {
				tr := openTracker(t, tt.cfg)
				p := workload.VforkParent(t, 5*time.Second)
				th := find(t, tr, p.Pid, func(th *state.Thread) bool { return th.State == state.Uninterruptible })
				c, err := tr.Counters()
				if err != nil {
					t.Fatal(err)
				}
				missing := tt.kernel && th.KernelStack == 0 || tt.usr && th.UserStack == 0
				if missing && c.LostStacks > 0 && attempt < 3 {
					t.Logf("attempt %d: a stack of the parent was lost (%d stacks lost): again", attempt, c.LostStacks)
					continue
				}
				checkStacks(t, tr, th, tt.kernel, tt.usr, c.LostStacks)
				return
			}
		})
	}
}

// checkStacks says whether the thread's kernel and user stacks have frames as wanted.
func checkStacks(t *testing.T, tr *Tracker, th state.Thread, kernel, usr bool, lost uint64) {
	t.Helper()
	for _, s := range []struct {
		what string
		id   uint16
		want bool
	}{{"kernel", th.KernelStack, kernel}, {"user", th.UserStack, usr}} {
		frames, err := tr.Stack(s.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(frames) > 0; got != s.want {
			t.Errorf("vfork parent in D: %s stack %d has %d frames, want frames: %v (stacks lost: %d)",
				s.what, s.id, len(frames), s.want, lost)
		}
	}
}

func TestParseStackMode(t *testing.T) {
	for _, s := range []string{"uninterruptible", "off-cpu", "off"} {
		if m, err := ParseStackMode(s); err != nil || string(m) != s {
			t.Errorf("ParseStackMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseStackMode("sleeping"); err == nil {
		t.Error("ParseStackMode accepted an unknown mode")
	}
	spec, err := loadThreadcap()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Capacity: 1, Syscalls: SyscallsFull, Stacks: StacksOff, StackEntries: MaxStackEntries + 1}
	if err := configure(spec, cfg, false); err == nil {
		t.Error("more stack entries than a record's id can hold were accepted")
	}
}

// TestPruneKeepsTheStacksRecordsHold prunes the stack map while a vfork parent waits in D
// and short-lived threads have come and gone: their stacks go, the parent's stays.
func TestPruneKeepsTheStacksRecordsHold(t *testing.T) {
	walkAtSwitchOut = true
	defer func() { walkAtSwitchOut = false }()
	tr := openTracker(t, Config{Stacks: StacksOffCPU})
	p := workload.VforkParent(t, 5*time.Second)
	held := find(t, tr, p.Pid, func(th *state.Thread) bool {
		return th.State == state.Uninterruptible && th.KernelStack != 0
	})
	churn(100)
	reap(t, tr, nil)
	deleted, err := tr.PruneStacks()
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) == 0 {
		t.Error("nothing was pruned, though threads that slept have exited and been freed")
	}
	for _, id := range deleted {
		if id == held.KernelStack {
			t.Fatalf("stack %d, which the waiting vfork parent holds, was pruned", id)
		}
	}
	if frames, err := tr.Stack(held.KernelStack); err != nil || len(frames) == 0 {
		t.Errorf("the vfork parent's stack %d is gone after pruning: %v", held.KernelStack, err)
	}
}
