// SPDX-License-Identifier: Apache-2.0

// Package seqclaim tests the kernel side's write protocol (bpf/seqclaim.h) off the kernel:
// the same C functions, on host threads and signal handlers that stand for CPUs and for
// programs interrupting a write on their CPU. No kernel lets a test choose when a timer
// interrupts a syscall program or a repair races a switch-in; threads and signals at
// 20 µs make those interleavings by the hundred thousand.
package seqclaim

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// result is the harness's one line.
type result struct {
	writes, nested, backoffs, copies, torn uint64
	odd                                    int
}

// run builds testdata/harness.c (with extra flags) and runs it for seconds.
func run(t *testing.T, seconds string, flags ...string) result {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("no C compiler (cc) to build the harness: install gcc")
	}
	bin := filepath.Join(t.TempDir(), "harness")
	args := append([]string{"-O2", "-Wall", "-Werror", "-pthread", "-I../../bpf", "-o", bin, "testdata/harness.c"}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, seconds).Output()
	if err != nil {
		t.Fatalf("running the harness: %v", err)
	}
	var r result
	if _, err := fmt.Sscanf(string(out), "writes=%d nested=%d backoffs=%d copies=%d torn=%d odd=%d",
		&r.writes, &r.nested, &r.backoffs, &r.copies, &r.torn, &r.odd); err != nil {
		t.Fatalf("harness said %q: %v", out, err)
	}
	t.Logf("%s %v: %s", filepath.Base(bin), flags, out)
	return r
}

// Every interleaving the harness makes leaves seq even, and the reader never accepts a
// copy a writer was changing, while writes on three CPUs and writes nested in them hit
// the same two records.
func TestClaimsNeverOverlap(t *testing.T) {
	r := run(t, "3")
	if r.torn != 0 || r.odd != 0 {
		t.Errorf("%d torn copies accepted, %d records left odd: writers overlapped", r.torn, r.odd)
	}
	// The run must have exercised what it claims to: contended writes, nested ones, and
	// the back-offs that a nested writer or a repair takes.
	if r.writes < 10000 || r.nested < 1000 || r.backoffs == 0 || r.copies < 10000 {
		t.Errorf("the harness did too little to say anything: %+v", r)
	}
}

// The harness catches the protocol threadcap used before (seq++ at both ends of a write,
// "writers never overlap"): a record left odd for good, or a torn copy accepted. Without
// this, a harness too gentle to make writers overlap would pass anything.
func TestHarnessCatchesOverlappingWriters(t *testing.T) {
	r := run(t, "3", "-DOLD_SEQ")
	if r.torn == 0 && r.odd == 0 {
		t.Errorf("the old protocol passed the harness: %+v", r)
	}
}
