// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"slices"
	"strings"

	"github.com/threadcap/threadcap/sampler/procinfo"
)

// Filter says which threads get a row at a tick.
//
// By default a thread gets one when it was on CPU, runnable or uninterruptible at the
// tick, or at any moment since the previous tick (so a burst between two ticks is not
// lost, and the time columns add up to the CPU time really used). Idle threads, idle
// kernel threads among them, get none, and neither does threadcap itself.
type Filter struct {
	// All gives every thread a row at every tick, sleepers included.
	All bool
	// Pids, when set, keeps only these processes.
	Pids []int32
	// Processes, when set, keeps only processes with one of these names (their comm).
	Processes []string
	// Cgroups, when set, keeps only processes in one of these cgroups (v2 paths, such as
	// /system.slice/mysql.service) or below them.
	Cgroups []string
}

func (f *Filter) wantsPid(pid int32) bool {
	return len(f.Pids) == 0 || slices.Contains(f.Pids, pid)
}

func (f *Filter) wantsProcess(p *procinfo.Process) bool {
	if len(f.Processes) > 0 && !slices.Contains(f.Processes, p.Name) {
		return false
	}
	if len(f.Cgroups) == 0 {
		return true
	}
	for _, cg := range f.Cgroups {
		cg = strings.TrimSuffix(cg, "/")
		if p.Cgroup == cg || strings.HasPrefix(p.Cgroup, cg+"/") {
			return true
		}
	}
	return false
}
