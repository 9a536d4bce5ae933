// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// target is one performance target of the tracker (#2), sampler (#3), block I/O (#18) or
// hot-path (#21) issues.
type target struct {
	what, goal string
	// measure returns the worst value over the configurations it applies to, which one
	// that was, and whether the goal is met; ok is false when the run did not measure it.
	measure func(r *report) (value string, met, ok bool)
}

// Names of the workloads the targets are about.
const (
	wlSyscalls = "syscall storm"
	wlPingPong = "context-switch storm"
	wlScale10k = "scale 10000"
)

var targets = []target{
	{"daemon CPU per tick, 10,000 threads (100 busy)", "≤ 1 ms", func(r *report) (string, bool, bool) {
		return r.worstDaemon(wlScale10k, func(s sample) float64 { return s.cpuPerTick }, 1e6,
			func(v float64) string { return fmt.Sprintf("%.3f ms", v/1e6) })
	}},
	{"daemon RSS (VmHWM), 10,000 threads", "≤ 40 MB", func(r *report) (string, bool, bool) {
		return r.worstDaemon(wlScale10k, func(s sample) float64 { return float64(s.hwmKB) }, 40*1024,
			func(v float64) string { return fmt.Sprintf("%.1f MB", v/1024) })
	}},
	{"start → first sample, 10,000 threads", "≤ 1 s", func(r *report) (string, bool, bool) {
		return r.worstDaemon(wlScale10k, func(s sample) float64 { return float64(s.startup) }, float64(time.Second),
			func(v float64) string { return fmt.Sprintf("%.0f ms", v/1e6) })
	}},
	{"daemon CPU per tick, 10,000 threads (100 busy), tick mode at 20 Hz", "≤ 3 ms", func(r *report) (string, bool, bool) {
		return r.worstDaemonIn(wlScale10k, modeTick, 20, func(s sample) float64 { return s.cpuPerTick }, 3e6,
			func(v float64) string { return fmt.Sprintf("%.3f ms", v/1e6) })
	}},
	{"syscall storm, tick mode vs none (#32)", "≥ 0.99", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlSyscalls, modeTick, configNone, 0.99)
	}},
	{"context-switch storm, tick mode vs none (#32)", "≥ 0.99", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlPingPong, modeTick, configNone, 0.99)
	}},
	{"syscall storm, full mode vs floor", "≥ 0.85", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlSyscalls, "full", configFloor, 0.85)
	}},
	{"syscall storm, passive mode vs none", "≥ 0.97", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlSyscalls, "passive", configNone, 0.97)
	}},
	{"context-switch storm, full mode vs floor", "≥ 0.95", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlPingPong, "full", configFloor, 0.95)
	}},
	{"context-switch storm, passive mode vs the floor of its hooks", "≥ 0.95", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlPingPong, "passive", configFloorPassive, 0.95)
	}},
	{"context-switch storm, passive mode vs none (#21)", "≥ 0.95", func(r *report) (string, bool, bool) {
		return r.worstRatio(wlPingPong, "passive", configNone, 0.95)
	}},
	{"mix, io on (the default) vs off", "≥ 0.97", func(r *report) (string, bool, bool) {
		return r.ioRatio(wlMix, 0.97)
	}},
	{"random O_DIRECT reads, io on (the default) vs off", "≥ 0.97", func(r *report) (string, bool, bool) {
		return r.ioRatio(wlDirectRead, 0.97)
	}},
}

// ioRatio is the workload's throughput with io tracking on (full mode at the first rate,
// the defaults) over the same with io off, the two interleaved in every round.
func (r *report) ioRatio(workload string, goal float64) (string, bool, bool) {
	var on, off string
	for _, c := range r.configs {
		switch {
		case c.mode == "full" && c.settings == "" && on == "":
			on = c.name
		case strings.HasSuffix(c.name, configIOOff):
			off = c.name
		}
	}
	s, base := r.res[workload][on], r.res[workload][off]
	if len(s) == 0 || len(base) == 0 {
		return "", false, false
	}
	v := median(ratios(s, base))
	if math.IsNaN(v) {
		return "", false, false
	}
	return fmt.Sprintf("%.3f (%s vs %s)", v, on, off), v >= goal, true
}

func (r *report) targetTable(w io.Writer) {
	tableHead(w, "Targets (issues #2, #3, #18 and #21)",
		"Each is the worst median over the configurations it applies to (every rate; full and passive mode unless a mode is named).",
		"| target | goal | measured (worst) | met |", "|---|---|---|---|")
	for _, t := range targets {
		v, met, ok := t.measure(r)
		verdict := "yes"
		switch {
		case !ok:
			v, verdict = "not measured", "–"
		case !met:
			verdict = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.what, t.goal, v, verdict)
	}
	fmt.Fprintln(w)
}

// worstDaemon is the highest median of f over the default daemon configurations with hooks
// (full and passive) on workload, met when it is at most limit.
func (r *report) worstDaemon(workload string, f func(sample) float64, limit float64, format func(float64) string) (string, bool, bool) {
	return r.worstDaemonIn(workload, "", 0, f, limit, format)
}

// worstDaemonIn is worstDaemon over the configurations in mode at hz; "" and 0: those of the
// modes with hooks (the hook-free mode has its own targets), at any rate.
func (r *report) worstDaemonIn(workload, mode string, hz int, f func(sample) float64, limit float64, format func(float64) string) (string, bool, bool) {
	worst, which := math.Inf(-1), ""
	for _, c := range r.configs {
		if mode == "" && c.mode == modeTick || mode != "" && c.mode != mode || hz != 0 && c.hz != hz {
			continue
		}
		if s := r.res[workload][c.name]; c.daemon() && c.settings == "" && len(s) > 0 {
			if v := median(field(s, f)); v > worst {
				worst, which = v, c.name
			}
		}
	}
	if which == "" {
		return "", false, false
	}
	return fmt.Sprintf("%s (%s)", format(worst), which), worst <= limit, true
}

// worstRatio is the lowest median throughput ratio to baseline over the default daemon
// configurations in mode, met when it is at least goal.
func (r *report) worstRatio(workload, mode, baseline string, goal float64) (string, bool, bool) {
	worst, which := math.Inf(1), ""
	for _, c := range r.configs {
		s := r.res[workload][c.name]
		if c.mode != mode || c.settings != "" || len(s) == 0 {
			continue
		}
		if v := median(ratios(s, r.res[workload][baseline])); v < worst {
			worst, which = v, c.name
		}
	}
	if which == "" || math.IsNaN(worst) {
		return "", false, false
	}
	return fmt.Sprintf("%.3f (%s)", worst, which), worst >= goal, true
}
