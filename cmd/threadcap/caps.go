// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Capability numbers (linux/capability.h).
const (
	capDacReadSearch = 2
	capSysPtrace     = 19
	capSysAdmin      = 21
	capPerfmon       = 38
	capBPF           = 39
)

// capability is one that threadcap needs to run.
type capability struct {
	name string
	bit  uint
	why  string
}

// neededCaps load and attach the programs. CAP_SYS_ADMIN also grants both, as it did
// before Linux 5.8 split them out.
var neededCaps = []capability{
	{"CAP_BPF", capBPF, "load the programs and create their maps"},
	{"CAP_PERFMON", capPerfmon, "attach tracing programs and read kernel memory"},
}

// usefulCaps are not needed to run, but without them the rows of other users' processes
// miss columns: /proc hides those files from a process that is not their owner.
var usefulCaps = []capability{
	{"CAP_SYS_PTRACE", capSysPtrace, "exe and wchan of other users' processes"},
	{"CAP_DAC_READ_SEARCH", capDacReadSearch, "syscall of seeded threads and fd_target of other users' processes"},
}

// effectiveCaps reads this process's effective capability set.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff in /proc/self/status: %w", sc.Err())
}

func has(caps uint64, bit uint) bool { return caps&(1<<bit) != 0 }

// missingCaps lists what threadcap needs and this process lacks.
func missingCaps(caps uint64) []capability {
	if has(caps, capSysAdmin) {
		return nil
	}
	var missing []capability
	for _, c := range neededCaps {
		if !has(caps, c.bit) {
			missing = append(missing, c)
		}
	}
	return missing
}

// capsFix says how to grant what is missing.
func capsFix(missing []capability) string {
	names := make([]string, len(missing))
	for i, c := range missing {
		names[i] = c.name
	}
	list := strings.Join(names, ", ")
	return fmt.Sprintf("run threadcap as root, or grant it %s (AmbientCapabilities= in deploy/threadcap.service, or setcap cap_bpf,cap_perfmon+ep on the binary)", list)
}

// requireCapabilities fails, naming each missing capability and what it is for, when
// loading the programs could only fail with "operation not permitted".
func requireCapabilities() error {
	caps, err := effectiveCaps()
	if err != nil {
		return err
	}
	missing := missingCaps(caps)
	if len(missing) == 0 {
		return nil
	}
	var why []string
	for _, c := range missing {
		why = append(why, c.name+" (to "+c.why+")")
	}
	return fmt.Errorf("missing capability %s: %s", strings.Join(why, " and "), capsFix(missing))
}
