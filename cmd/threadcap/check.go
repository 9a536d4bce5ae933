// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/configs/config"
)

type checkResult struct {
	name, detail, fix string
}

// checkCommand is `threadcap check`: one line per requirement, with the fix for each
// that fails, and a non-zero exit when one does.
func checkCommand(args []string) int {
	_, cfg, err := config.Settings("check", args)
	if err != nil {
		return exitCode(err)
	}
	// Only the report goes to stdout; the loader's own logs would interleave with it.
	logrus.SetLevel(logrus.ErrorLevel)
	if !printChecks(os.Stdout, runChecks(&cfg)) {
		return exitFailure
	}
	return 0
}

func runChecks(cfg *config.Config) []checkResult {
	missing, err := bpf.Missing(cfg.Tracker().Syscalls)
	results := []checkResult{checkKernel(missing, err), checkBTF(), checkFeatures(missing, err), checkCaps(),
		checkPIDNamespace("/proc"), checkLoad(cfg), checkDir(cfg.Dir), checkSpace(cfg)}
	if cfg.Syscalls == bpf.SyscallsTick {
		results = append(results, checkSchedstats("/proc"))
	}
	return results
}

// checkSchedstats says, for the hook-free mode, whether the kernel keeps each thread's
// sleeping and uninterruptible times (kernel.sched_schedstats), and what the mode does
// with or without them. Informative only: the mode runs either way, and threadcap never
// changes a sysctl.
func checkSchedstats(proc string) checkResult {
	r := checkResult{name: "schedstats"}
	b, err := os.ReadFile(filepath.Join(proc, "sys/kernel/sched_schedstats"))
	on := err == nil && strings.TrimSpace(string(b)) == "1"
	switch {
	case err != nil:
		r.detail = "not in this kernel (built without CONFIG_SCHEDSTATS)"
	case on:
		r.detail = "on (kernel.sched_schedstats=1)"
	default:
		r.detail = "off (kernel.sched_schedstats=0; sysctl kernel.sched_schedstats=1 turns them on, " +
			"at the price of a few counter updates at every wakeup and sleep of every thread)"
	}
	if on {
		r.detail += "; syscalls tick splits a user thread's time off CPU into sleeping and uninterruptible " +
			"by the kernel's own counts (as the sysctl is when threadcap starts)"
	} else {
		r.detail += "; syscalls tick splits a row's time off CPU into sleeping and uninterruptible " +
			"by the state seen at the ticks, and its rows say so in sleep_split_estimated " +
			"(on_cpu_us, runnable_us and the switches are the kernel's own counts)"
	}
	return r
}

// printChecks writes one line per check and reports whether all passed.
func printChecks(w io.Writer, results []checkResult) bool {
	ok := true
	for _, r := range results {
		if r.fix == "" {
			fmt.Fprintf(w, "OK    %-14s %s\n", r.name, r.detail)
			continue
		}
		ok = false
		fmt.Fprintf(w, "FAIL  %-14s %s\n      fix: %s\n", r.name, r.detail, r.fix)
	}
	return ok
}

// checkKernel fails a release older than bpf.MinKernel only when the features line finds
// something required missing: distribution kernels backport features.
func checkKernel(missing []bpf.Feature, featuresErr error) checkResult {
	r := checkResult{name: "kernel"}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		r.detail, r.fix = err.Error(), "run threadcap on Linux"
		return r
	}
	release := unix.ByteSliceToString(uts.Release[:])
	r.detail = fmt.Sprintf("%s (%s or newer has every feature threadcap uses)", release, bpf.MinKernel)
	if older(release, bpf.MinKernel) {
		if featuresErr != nil || len(bpf.Required(missing)) > 0 {
			r.fix = "upgrade to Linux " + bpf.MinKernel + " or newer"
		} else {
			r.detail = fmt.Sprintf("%s (older than %s, but has every feature threadcap needs)", release, bpf.MinKernel)
		}
	}
	return r
}

// older reports whether release is older than the major.minor version oldest; a release that
// cannot be read counts as older.
func older(release, oldest string) bool {
	var major, minor, minMajor, minMinor int
	fmt.Sscanf(oldest, "%d.%d", &minMajor, &minMinor)
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major < minMajor || major == minMajor && minor < minMinor
}

// checkFeatures names what the kernel lacks, with the release that brought it; a missing
// feature threadcap can do without passes, saying what is lost.
func checkFeatures(missing []bpf.Feature, err error) checkResult {
	r := checkResult{name: "features"}
	if err != nil {
		r.detail, r.fix = err.Error(), "see the BTF line above"
		return r
	}
	if required := bpf.Required(missing); len(required) > 0 {
		r.detail = "missing " + bpf.Describe(required)
		r.fix = "upgrade to Linux " + bpf.MinKernel + " or newer"
		return r
	}
	r.detail = "every feature threadcap needs"
	for _, f := range missing {
		r.detail += fmt.Sprintf("; without %s (Linux %s), %s", f.Name, f.Since, f.Without)
	}
	return r
}

func checkBTF() checkResult {
	r := checkResult{name: "BTF", detail: bpf.BTFPath}
	if _, err := os.Stat(bpf.BTFPath); err != nil {
		r.detail = err.Error()
		r.fix = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (the default of most distributions' kernels)"
	}
	return r
}

func checkCaps() checkResult {
	r := checkResult{name: "capabilities"}
	caps, err := effectiveCaps()
	if err != nil {
		r.detail, r.fix = err.Error(), "mount /proc"
		return r
	}
	missing := missingCaps(caps)
	switch {
	case len(missing) > 0:
		names := make([]string, len(missing))
		for i, c := range missing {
			names[i] = c.name
		}
		r.detail, r.fix = "missing "+strings.Join(names, " and "), capsFix(missing)
	case os.Geteuid() == 0 && has(caps, capSysAdmin):
		r.detail = "root"
	default:
		r.detail = "CAP_BPF and CAP_PERFMON"
		for _, c := range usefulCaps {
			if !has(caps, c.bit) {
				r.detail += "; without " + c.name + ", no " + c.why
			}
		}
	}
	return r
}

// checkLoad loads and attaches the programs as `run` would, then detaches them.
func checkLoad(cfg *config.Config) checkResult {
	r := checkResult{name: "bpf programs"}
	_, probes, err := cfg.SpanProbes()
	if err != nil {
		r.detail, r.fix = "spans: "+err.Error(), "fix spans in the config file"
		return r
	}
	tc := cfg.Tracker()
	tc.Spans = probes
	t, err := bpf.Open(tc)
	if err != nil {
		r.detail = "loading and attaching failed: " + err.Error()
		r.fix = "see the capabilities and BTF lines above; a verifier log means this kernel rejects the programs: report it with uname -r"
		return r
	}
	r.detail = fmt.Sprintf("loaded and attached (syscalls %s, stacks %s, capacity %d)", cfg.Syscalls, cfg.Stacks.Kernel, t.Capacity())
	if len(probes) > 0 {
		r.detail += fmt.Sprintf(", and %d span probe sites", len(probes))
	}
	if err := t.Close(); err != nil {
		r.detail, r.fix = "detaching failed: "+err.Error(), "report it with uname -r"
	}
	return r
}

// checkDir writes a file where the hour files go, or, when the directory does not exist
// yet, where run will create it.
func checkDir(dir string) checkResult {
	r := checkResult{name: "data dir"}
	where, exists := existingAncestor(dir)
	f, err := os.CreateTemp(where, ".threadcap-check-*")
	if err != nil {
		r.detail = err.Error()
		r.fix = fmt.Sprintf("make %s writable by threadcap's user, or choose another with --dir or dir:", where)
		return r
	}
	f.Close()
	os.Remove(f.Name())
	if exists {
		r.detail = dir + " is writable"
		if pid, ok := lockHolder(dir); ok {
			r.detail += fmt.Sprintf(" (in use by threadcap pid %d)", pid)
		}
	} else {
		r.detail = fmt.Sprintf("%s will be created in %s", dir, where)
	}
	return r
}

// existingAncestor is dir if it exists, else its nearest existing parent.
func existingAncestor(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, false
	}
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, p == abs
		}
		if p == filepath.Dir(p) {
			return p, false
		}
	}
}

// checkSpace fails when writing would pause at once for want of space.
func checkSpace(cfg *config.Config) checkResult {
	r := checkResult{name: "free space"}
	where, _ := existingAncestor(cfg.Dir)
	var fs unix.Statfs_t
	if err := unix.Statfs(where, &fs); err != nil {
		r.detail, r.fix = err.Error(), "check the file system of the data dir"
		return r
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	floor := int64(cfg.Output.MinFreeBytes)
	r.detail = fmt.Sprintf("%s free in %s (output.min_free_bytes %s)", humanBytes(free), where, humanBytes(floor))
	if free <= floor || free == 0 {
		r.fix = "free space there, lower output.min_free_bytes, or choose another dir"
	}
	return r
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
