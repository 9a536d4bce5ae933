// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestProfileProgramCost measures, with THREADCAP_PROFILE_COST=1, what the profile's
// program costs a run by the kernel's own accounting (kernel.bpf_stats_enabled, on for the
// test and put back after) at 99 Hz over 30 s of a spinner and a syscall storm, and the
// share of a CPU that makes per CPU: run time × rate. It logs; it asserts nothing about
// time (BENCHMARKS.md has the figures).
func TestProfileProgramCost(t *testing.T) {
	if os.Getenv("THREADCAP_PROFILE_COST") != "1" {
		t.Skip("a measurement: THREADCAP_PROFILE_COST=1 runs it")
	}
	privileged.Require(t)
	const statsPath = "/proc/sys/kernel/bpf_stats_enabled"
	was, err := os.ReadFile(statsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statsPath, []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(statsPath, was, 0)
	const hz = 99
	p, err := OpenProfile(hz, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	workload.Spinner(t)
	workload.SyscallStorm(t)
	for range 3 {
		time.Sleep(10 * time.Second)
		st, err := p.coll.Programs[profileProgOnProfileTick].Stats()
		if err != nil {
			t.Fatal(err)
		}
		counts, stacks, err := p.Take()
		if err != nil {
			t.Fatal(err)
		}
		perRun := float64(st.Runtime.Nanoseconds()) / float64(st.RunCount)
		t.Logf("%d runs, %.0f ns a run: %.3f%% of a CPU per CPU at %d Hz; this take: %d counts, %d stacks; lost so far: %d samples, %d stacks",
			st.RunCount, perRun, perRun*hz/1e7, hz, len(counts), len(stacks), p.LostSamples(), p.LostStacks())
	}
}
