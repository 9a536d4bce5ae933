// SPDX-License-Identifier: Apache-2.0

package state

import "testing"

func TestFromProc(t *testing.T) {
	for letter, want := range map[string]State{
		"R": Runnable, "S": Sleeping, "I": Sleeping, "D": Uninterruptible, "T": Stopped, "t": Stopped, "Z": Dead,
	} {
		if got, err := FromProc(letter); err != nil || got != want {
			t.Errorf("FromProc(%q) = %v, %v; want %v", letter, got, err, want)
		}
	}
	if _, err := FromProc("?"); err == nil {
		t.Error("FromProc accepted an unknown letter")
	}
}

func TestSyscallName(t *testing.T) {
	for nr, want := range map[int32]string{NoSyscall: "", 9999: "syscall_9999"} {
		if got := SyscallName(nr); got != want {
			t.Errorf("SyscallName(%d) = %q, want %q", nr, got, want)
		}
	}
	if SyscallName(0) == "" || SyscallName(0) == "syscall_0" {
		t.Errorf("syscall 0 has no name on this architecture: %q", SyscallName(0))
	}
}

func TestTimesAndStateAt(t *testing.T) {
	th := Thread{State: OnCPU, PrevState: Runnable, SinceNs: 1000, StateNs: [TimedStates]uint64{OnCPU: 50, Runnable: 7}}
	if got := th.TimesAt(1500); got[OnCPU] != 550 || got[Runnable] != 7 {
		t.Errorf("TimesAt(1500) = %v: want 550 ns on CPU, 7 runnable", got)
	}
	if got := th.TimesAt(900); got[OnCPU] != 50 {
		t.Errorf("TimesAt before the state began = %v: want the closed total only", got)
	}
	if th.StateAt(900) != Runnable || th.StateAt(1000) != OnCPU {
		t.Errorf("StateAt: %v at 900, %v at 1000; want runnable then on_cpu", th.StateAt(900), th.StateAt(1000))
	}
	seeded := Thread{State: Sleeping, Seeded: true}
	if got := seeded.TimesAt(5000); got != ([TimedStates]uint64{}) {
		t.Errorf("a seeded thread, whose state began at an unknown time, has times %v", got)
	}
}

func TestCPUAt(t *testing.T) {
	for _, tc := range []struct {
		name string
		th   Thread
		want uint64
	}{
		{"off CPU: the count stands", Thread{State: Sleeping, SinceNs: 1000, CPUNs: 300, CPUSyncNs: 1000}, 300},
		{"on CPU since its switch-in", Thread{State: OnCPU, SinceNs: 1000, CPUNs: 300, CPUSyncNs: 1000}, 800},
		// A timer brought the count up to date at 1400: the kernel said 350 ns, not 400.
		{"on CPU, count brought up to date since", Thread{State: OnCPU, SinceNs: 1000, CPUNs: 650, CPUSyncNs: 1400}, 750},
		{"seeded: no stretch to count", Thread{State: OnCPU, CPUNs: 300}, 300},
	} {
		if got := tc.th.CPUAt(1500); got != tc.want {
			t.Errorf("%s: CPUAt(1500) = %d, want %d", tc.name, got, tc.want)
		}
	}
}
