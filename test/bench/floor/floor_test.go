// SPDX-License-Identifier: Apache-2.0

package floor

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/threadcap/threadcap/test/privileged"
)

// TestSameHooksAsThreadcap keeps the floor honest: it must hook exactly what threadcap
// hooks with its defaults (block I/O tracking included), or the "vs floor" ratios compare
// different things.
func TestSameHooksAsThreadcap(t *testing.T) {
	var want []string
	for _, obj := range []string{"threadcap.bpf.c", "io.bpf.c"} {
		src, err := os.ReadFile("../../../bpf/" + obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`SEC\("(tp_btf/[a-z_]+)"\)\s+int BPF_PROG\((\w+)`).FindAllSubmatch(src, -1) {
			// Attached only in the hook-free mode with spans.
			if string(m[2]) != "on_exit_spans" {
				want = append(want, string(m[1]))
			}
		}
	}
	spec, err := loadFloor()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range spec.Programs {
		got = append(got, p.SectionName)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("floor hooks %v, threadcap hooks %v: make floor.bpf.c hook the same tracepoints", got, want)
	}
}

// TestAttachAndClose attaches every program, then all but the raw_syscalls pair.
func TestAttachAndClose(t *testing.T) {
	privileged.Require(t)
	spec, err := loadFloor()
	if err != nil {
		t.Fatal(err)
	}
	all := len(spec.Programs)
	for _, tt := range []struct {
		syscalls bool
		want     int
	}{{true, all}, {false, all - 2}} {
		h, err := Attach(tt.syscalls)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.links) != tt.want {
			t.Errorf("Attach(%v): %d programs attached, want %d", tt.syscalls, len(h.links), tt.want)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("detaching the floor: %v", err)
		}
	}
}
