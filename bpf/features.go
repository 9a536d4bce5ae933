// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Feature is one thing of the kernel's that the programs use, found in the kernel's own
// BTF (which lists its map types, helpers, kfuncs and tracepoint arguments), so that a
// distribution kernel with a backport counts by what it has, not by its version.
type Feature struct {
	// Name is the kernel's name for it.
	Name string
	// Since is the first Linux release that has it.
	Since string
	// Without says what threadcap does without it; "" when it cannot run at all.
	Without string
	// Passive is set when only --syscalls passive (and tick) needs it.
	Passive bool
	has     func(*btf.Spec) bool
}

// MinKernel is the oldest Linux release that has every required feature.
const MinKernel = "5.18"

// Features are what the programs need, oldest first, then what they use where it exists.
var Features = []Feature{
	{Name: "BPF_MAP_TYPE_TASK_STORAGE", Since: "5.11",
		has: enumHas("bpf_map_type", "BPF_MAP_TYPE_TASK_STORAGE")},
	{Name: "bpf_get_current_task_btf", Since: "5.11",
		has: enumHas("bpf_func_id", "BPF_FUNC_get_current_task_btf")},
	{Name: "bpf_task_pt_regs", Since: "5.15", Passive: true,
		has: enumHas("bpf_func_id", "BPF_FUNC_task_pt_regs")},
	// on_switch reads prev_state from the event instead of the task, whose state may
	// already have changed again by then.
	{Name: "sched_switch's prev_state argument", Since: MinKernel,
		has: tracepointArgs("sched_switch", 4)},
	{Name: "bpf_task_from_pid", Since: "6.2",
		Without: "a thread that leaves a CPU with no sched_switch event is taken to have slept from then, " +
			"instead of in the state the kernel shows; and the tcp_ columns are asked of sock_diag " +
			"(some 4 µs a row, only in network namespaces threadcap can enter) instead of read in the kernel",
		has: kfuncHas("bpf_task_from_pid")},
	{Name: "bpf_rdonly_cast", Since: "6.2",
		Without: "the tcp_ columns are asked of sock_diag (some 4 µs a row, only in network namespaces " +
			"threadcap can enter) instead of read in the kernel",
		has: kfuncHas("bpf_rdonly_cast")},
}

// Missing are the features of the running kernel's BTF that it lacks, for syscall mode
// mode. The error is for a kernel whose BTF cannot be read.
func Missing(mode SyscallMode) ([]Feature, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	var missing []Feature
	for _, f := range Features {
		if f.Passive && mode == SyscallsFull {
			continue
		}
		if !f.has(spec) {
			missing = append(missing, f)
		}
	}
	return missing, nil
}

// Required are the features of missing that threadcap cannot run without.
func Required(missing []Feature) []Feature {
	return slices.DeleteFunc(slices.Clone(missing), func(f Feature) bool { return f.Without != "" })
}

// Describe names each feature with the release that brought it.
func Describe(features []Feature) string {
	names := make([]string, len(features))
	for i, f := range features {
		names[i] = fmt.Sprintf("%s (Linux %s)", f.Name, f.Since)
	}
	return strings.Join(names, ", ")
}

// ErrMissingFeatures means the kernel lacks something the programs need.
var ErrMissingFeatures = errors.New("this kernel lacks what threadcap needs")

func missingError(required []Feature) error {
	return fmt.Errorf("%w: %s; use Linux %s or newer", ErrMissingFeatures, Describe(required), MinKernel)
}

func enumHas(enum, value string) func(*btf.Spec) bool {
	return func(spec *btf.Spec) bool {
		var e *btf.Enum
		if spec.TypeByName(enum, &e) != nil {
			return false
		}
		return slices.ContainsFunc(e.Values, func(v btf.EnumValue) bool { return v.Name == value })
	}
}

// tracepointArgs: the tracepoint's BTF prototype (btf_trace_NAME, whose first parameter is
// the tracepoint's own data pointer) has at least args arguments.
func tracepointArgs(name string, args int) func(*btf.Spec) bool {
	return func(spec *btf.Spec) bool {
		var td *btf.Typedef
		if spec.TypeByName("btf_trace_"+name, &td) != nil {
			return false
		}
		ptr, ok := td.Type.(*btf.Pointer)
		if !ok {
			return false
		}
		proto, ok := ptr.Target.(*btf.FuncProto)
		return ok && len(proto.Params)-1 >= args
	}
}

// kernelHas reports whether the running kernel's BTF shows what has looks for.
func kernelHas(has func(*btf.Spec) bool) (bool, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	return has(spec), nil
}

func kfuncHas(name string) func(*btf.Spec) bool {
	return func(spec *btf.Spec) bool {
		var fn *btf.Func
		return spec.TypeByName(name, &fn) == nil
	}
}
