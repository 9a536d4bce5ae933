// SPDX-License-Identifier: Apache-2.0

package usdt

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []Arg
	}{
		{"", nil},
		{"-4@$1", []Arg{{Kind: ArgConst, Value: 1, Size: 4, Signed: true}}},
		{"8@%rbx 4@%eax 1@%al 4@%r13d", []Arg{
			{Kind: ArgReg, RegOff: 40, Size: 8}, {Kind: ArgReg, RegOff: 80, Size: 4},
			{Kind: ArgReg, RegOff: 80, Size: 1}, {Kind: ArgReg, RegOff: 16, Size: 4}}},
		{"-4@-136(%rbp) 4@(%r12) 2@12(%r12)", []Arg{
			{Kind: ArgMem, RegOff: 32, Value: -136, Size: 4, Signed: true},
			{Kind: ArgMem, RegOff: 24, Size: 4}, {Kind: ArgMem, RegOff: 24, Value: 12, Size: 2}}},
		{"8@%rdi 8@%rsi", []Arg{{Kind: ArgReg, RegOff: 112, Size: 8}, {Kind: ArgReg, RegOff: 104, Size: 8}}},
	} {
		got, err := ParseArgs(tc.spec)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseArgs(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseArgs(%q)[%d] = %+v, want %+v", tc.spec, i, got[i], tc.want[i])
			}
		}
	}
	for _, bad := range []string{"4", "3@%eax", "4@%ah", "8@x0", "4@[sp, 12]", "8@foo(%rip)", "4@8(%rax,%rbx,2)", "4@0x10(%rax)", "x@%eax"} {
		if _, err := ParseArgs(bad); err == nil {
			t.Errorf("ParseArgs(%q) accepted an unsupported form", bad)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"-4@$1", "8@%rbx", "-4@-136(%rbp)", "4@(%r12)", "1@%al 8@%rax"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		args, err := ParseArgs(spec)
		if err != nil {
			return
		}
		for _, a := range args {
			if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 || a.Kind < ArgConst || a.Kind > ArgMem || a.RegOff > 20*8 {
				t.Errorf("ParseArgs(%q) gave %+v", spec, a)
			}
		}
	})
}

func TestParsePoint(t *testing.T) {
	for s, want := range map[string]Point{
		"usdt postgresql:query__start": {USDT, "postgresql:query__start"},
		"entry tc_work":                {Entry, "tc_work"},
		" return  tc_work ":            {Return, "tc_work"},
	} {
		if got, err := ParsePoint(s); err != nil || got != want {
			t.Errorf("ParsePoint(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "usdt query__start", "usdt :x", "uprobe f", "entry", "entry a b"} {
		if _, err := ParsePoint(bad); err == nil {
			t.Errorf("ParsePoint(%q) accepted it", bad)
		}
	}
}

// spanwork builds ../../test/workload/spanwork.c, whose probes are known.
func spanwork(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	bin := filepath.Join(t.TempDir(), "spanwork")
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "test", "workload", "spanwork.c")
	if out, err := exec.Command("cc", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("building spanwork: %v\n%s", err, out)
	}
	return bin
}

// TestSitesOfSpanwork finds the USDT probes and the function of a binary built here, as
// readelf shows them, and says what the binary has when a probe or function is missing.
func TestSitesOfSpanwork(t *testing.T) {
	bin := spanwork(t)
	start, err := Point{USDT, "threadcap:work__start"}.Sites(bin)
	if err != nil || len(start) != 1 {
		t.Fatalf("work__start: %+v, %v", start, err)
	}
	s := start[0]
	if s.Offset == 0 || s.Semaphore == 0 || len(s.Args) != 2 || s.Args[0].Kind != ArgReg || !s.Args[0].Signed || s.Return {
		t.Errorf("work__start site %+v", s)
	}
	code, _ := os.ReadFile(bin)
	if s.Offset >= uint64(len(code)) || code[s.Offset] != 0x90 {
		t.Errorf("work__start's offset %#x is not the probe's nop", s.Offset)
	}
	if s.Semaphore >= uint64(len(code)) || s.Semaphore%2 != 0 {
		t.Errorf("semaphore offset %#x is not a 2-byte counter in the file", s.Semaphore)
	}
	ret, err := Point{Return, "tc_work"}.Sites(bin)
	if err != nil || len(ret) != 1 || !ret[0].Return || ret[0].Args != nil {
		t.Errorf("return tc_work: %+v, %v", ret, err)
	}
	_, err = Point{USDT, "threadcap:nope"}.Sites(bin)
	if err == nil || !strings.Contains(err.Error(), "threadcap:work__done, threadcap:work__start") {
		t.Errorf("a missing probe's error %v does not list what the binary has", err)
	}
	_, err = Point{Entry, "nope"}.Sites(bin)
	if err == nil || !strings.Contains(err.Error(), "tc_work") {
		t.Errorf("a missing function's error %v does not list the binary's", err)
	}
	_, err = Point{USDT, "a:b"}.Sites("/bin/true")
	if err == nil || !strings.Contains(err.Error(), "no USDT probes") {
		t.Errorf("a binary without notes: %v", err)
	}
}

// TestPostgreSQLProbes reads the probes of Debian's PostgreSQL server, when installed:
// the preset's probes are there, with the forms of argument it uses.
func TestPostgreSQLProbes(t *testing.T) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		t.Skip("PostgreSQL is not installed")
	}
	for _, name := range []string{"query__start", "query__done", "lock__wait__start", "lwlock__wait__start", "buffer__read__done"} {
		sites, err := Point{USDT, "postgresql:" + name}.Sites(bins[0])
		if err != nil || len(sites) == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
