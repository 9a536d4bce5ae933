// SPDX-License-Identifier: Apache-2.0

package state

import (
	"os"
	"runtime"
	"testing"
)

func TestParseStat(t *testing.T) {
	// A name with spaces and parentheses: it ends at the last ')'.
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 1234 " +
		"10000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if string(st.comm) != "a (b) c" || st.state != "S" || st.flags != 4194560 || st.cpu != 1 {
		t.Errorf("parsed %q %q flags %d cpu %d", st.comm, st.state, st.flags, st.cpu)
	}
	for _, bad := range []string{"", "4242 no name S 1", "4242 (short) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted it", bad)
		}
	}
}

func TestParseStatOfThisThread(t *testing.T) {
	// The thread that opens the file must be the one reading it, to be seen on CPU.
	runtime.LockOSThread()
	b, err := os.ReadFile("/proc/thread-self/stat")
	runtime.UnlockOSThread()
	if err != nil {
		t.Skip("no /proc")
	}
	st, err := parseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.state != "R" || st.flags&pfKthread != 0 {
		t.Errorf("this thread, reading its own stat: state %q, flags %#x", st.state, st.flags)
	}
}

func TestParseSyscall(t *testing.T) {
	for _, c := range []struct {
		line string
		nr   int32
		arg0 uint64
	}{
		{"0 0x3 0x7ffd1000 0x1 0x0 0x0 0x0 0x7ffd0ff8 0x7f00aa\n", 0, 3},
		{"230 0x1 0x0 0x7ffe10 0x0 0x0 0x0 0x7ffe00 0x7f01\n", 230, 1},
		{"-1 0x7ffd0ff8 0x7f00aa\n", NoSyscall, 0},
		{"running\n", NoSyscall, 0},
		{"", NoSyscall, 0},
	} {
		nr, args := parseSyscall([]byte(c.line))
		if nr != c.nr || args[0] != c.arg0 {
			t.Errorf("parseSyscall(%q) = %d %#x, want %d %#x", c.line, nr, args[0], c.nr, c.arg0)
		}
	}
}

func TestSeedSeesThisProcess(t *testing.T) {
	threads, err := Seed("/proc")
	if err != nil {
		t.Skip("no /proc: " + err.Error())
	}
	self := int32(os.Getpid())
	for _, th := range threads {
		if th.Tid == self {
			if th.Pid != self || !th.Seeded || th.Name() == "" {
				t.Errorf("this process's main thread seeded as %+v", th)
			}
			return
		}
	}
	t.Errorf("%d threads seeded, none is this process (%d)", len(threads), self)
}
