// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The probes read this machine's kernel BTF: each must tell a name that is there from
// one that is not, or Missing would pass or refuse every kernel alike.
func TestFeatureProbesTellPresentFromAbsent(t *testing.T) {
	if _, err := os.Stat(BTFPath); err != nil {
		t.Skip("no kernel BTF on this machine")
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		has  func(*btf.Spec) bool
		want bool
	}{
		"task storage map":           {enumHas("bpf_map_type", "BPF_MAP_TYPE_TASK_STORAGE"), true},
		"unknown map type":           {enumHas("bpf_map_type", "BPF_MAP_TYPE_THREADCAP"), false},
		"unknown enum":               {enumHas("threadcap_enum", "BPF_MAP_TYPE_TASK_STORAGE"), false},
		"sched_switch's 4 arguments": {tracepointArgs("sched_switch", 4), true},
		"sched_switch has no 5th":    {tracepointArgs("sched_switch", 5), false},
		"unknown tracepoint":         {tracepointArgs("threadcap_event", 0), false},
		"a kernel function":          {kfuncHas("schedule"), true},
		"unknown function":           {kfuncHas("threadcap_kfunc"), false},
	} {
		if got := tt.has(spec); got != tt.want {
			t.Errorf("%s: found %v, want %v", name, got, tt.want)
		}
	}
}

func TestRequiredLeavesWhatThreadcapDoesWithout(t *testing.T) {
	missing := []Feature{
		{Name: "a", Since: "5.11"},
		{Name: "b", Since: "6.2", Without: "less"},
	}
	required := Required(missing)
	if len(required) != 1 || required[0].Name != "a" || len(missing) != 2 {
		t.Errorf("Required(%v) = %v", missing, required)
	}
	if got, want := Describe(missing), "a (Linux 5.11), b (Linux 6.2)"; got != want {
		t.Errorf("Describe: %q, want %q", got, want)
	}
}

// This machine's kernel is what CI runs on: it has everything, in both syscall modes.
func TestThisKernelHasEveryRequiredFeature(t *testing.T) {
	if _, err := os.Stat(BTFPath); err != nil {
		t.Skip("no kernel BTF on this machine")
	}
	for _, mode := range modes {
		missing, err := Missing(mode)
		if err != nil {
			t.Fatal(err)
		}
		if required := Required(missing); len(required) > 0 {
			t.Errorf("%s: missing %s", mode, Describe(required))
		}
	}
}
