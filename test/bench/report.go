// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// report writes the run's tables in Markdown.
type report struct {
	res       results
	configs   []config
	workloads []workloadInfo
}

// workloadInfo is how a workload is named in the tables and what its throughput counts.
type workloadInfo struct {
	name, unit string
}

func (r *report) write(w io.Writer) {
	r.throughputTable(w)
	r.daemonTable(w)
	r.targetTable(w)
}

func (r *report) throughputTable(w io.Writer) {
	tableHead(w, "Workload throughput",
		"Median of the rounds; spread is (max − min) / median; ratios are the median of per-round ratios, with their range.",
		"| workload | config | throughput | spread | vs none | vs floor | latency p50 / p99 |",
		"|---|---|---:|---:|---:|---:|---:|")
	for _, wl := range r.workloads {
		byConfig := r.res[wl.name]
		for _, c := range r.configs {
			s := byConfig[c.name]
			if len(s) == 0 {
				continue
			}
			v := field(s, ops)
			lat := ""
			if p50 := median(field(s, func(s sample) float64 { return s.p50 })); p50 > 0 {
				lat = fmt.Sprintf("%.0f / %.0f µs", p50, median(field(s, func(s sample) float64 { return s.p99 })))
			}
			fmt.Fprintf(w, "| %s | %s | %s %s | %.1f%% | %s | %s | %s |\n", wl.name, c.name,
				si(median(v)), wl.unit, 100*spread(v),
				ratioCell(ratios(s, byConfig[configNone])), ratioCell(ratios(s, byConfig[configFloor])), lat)
		}
	}
	fmt.Fprintln(w)
}

func (r *report) daemonTable(w io.Writer) {
	tableHead(w, "threadcap daemon cost",
		"CPU of all the daemon's threads (schedstat) over the window; per thread = per tick / threads on the machine; VmHWM at the window's end; CSV bytes written in the window × 3600 / its length; start-up = exec to the first row in the CSV file.",
		"| workload | threads | config | CPU per tick (range) | per thread | of one core | VmHWM | CSV per hour | start → first row |",
		"|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, wl := range r.workloads {
		for _, c := range r.configs {
			s := r.res[wl.name][c.name]
			if !c.daemon() || len(s) == 0 {
				continue
			}
			ticks := field(s, func(s sample) float64 { return s.cpuPerTick })
			perTick := median(ticks)
			threads := median(field(s, func(s sample) float64 { return float64(s.threads) }))
			fmt.Fprintf(w, "| %s | %.0f | %s | %.3f ms (%s) | %.0f ns | %.2f%% | %.1f MB | %s | %.0f ms |\n",
				wl.name, threads, c.name, perTick/1e6, rangeMs(ticks), perTick/threads,
				100*median(field(s, func(s sample) float64 { return s.cpuShare })),
				median(field(s, func(s sample) float64 { return float64(s.hwmKB) }))/1024,
				bytesCell(median(field(s, func(s sample) float64 { return s.csvPerHour }))),
				median(field(s, func(s sample) float64 { return float64(s.startup) }))/float64(time.Millisecond))
		}
	}
	fmt.Fprintln(w)
}

// rangeMs is "min–max" of nanosecond figures, in milliseconds.
func rangeMs(v []float64) string {
	v = slices.DeleteFunc(slices.Clone(v), math.IsNaN)
	if len(v) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f–%.2f", slices.Min(v)/1e6, slices.Max(v)/1e6)
}

// si writes a rate with a k or M suffix.
func si(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func bytesCell(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f kB", v/(1<<10))
}

// ratioCell is "median (min–max)" of per-round ratios.
func ratioCell(r []float64) string {
	if len(r) == 0 {
		return "–"
	}
	lo, hi := r[0], r[0]
	for _, x := range r {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.3f (%.2f–%.2f)", median(r), lo, hi)
}

// tableHead starts a Markdown table: its heading, the note that says how to read it, and
// its header and alignment rows.
func tableHead(w io.Writer, title, note string, rows ...string) {
	fmt.Fprintf(w, "### %s\n\n%s\n\n", title, note)
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}
