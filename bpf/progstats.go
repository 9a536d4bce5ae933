// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

// StatsEnabledPath is the sysctl that makes the kernel count every program's runs and run
// time (kernel.bpf_stats_enabled); off by default, since the counting costs each run
// two clock reads.
const StatsEnabledPath = "/proc/sys/kernel/bpf_stats_enabled"

// StatsEnabled says whether the kernel counts program runs now. Counts kept while it
// was on stay, frozen, when it is turned off.
func StatsEnabled() bool {
	b, err := os.ReadFile(StatsEnabledPath)
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// ProgramStats is what the kernel counted of one program: meaningful while StatsEnabled.
type ProgramStats struct {
	Name    string
	Runs    uint64
	Runtime time.Duration
}

// ProgramStats returns the kernel's counts of each loaded program, by name: the tracker's,
// the hook-free mode's pass in that mode, the walker of stacks still open at a tick when
// stacks are deferred and, with Config.IO, the block I/O tracker's.
func (t *Tracker) ProgramStats() ([]ProgramStats, error) {
	var out []ProgramStats
	colls := []*ebpf.Collection{t.coll, t.io}
	if t.iter != nil {
		colls = append(colls, t.iter.coll)
	}
	if t.kasks != nil {
		colls = append(colls, t.kasks.coll)
	}
	for _, coll := range colls {
		if coll == nil {
			continue
		}
		for name, prog := range coll.Programs {
			st, err := prog.Stats()
			if err != nil {
				return nil, fmt.Errorf("reading the run counts of %s: %w", name, err)
			}
			out = append(out, ProgramStats{Name: name, Runs: st.RunCount, Runtime: st.Runtime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
