// SPDX-License-Identifier: Apache-2.0

// Package load holds the benchmark's workloads. Each is prepared once, then run for as
// many measuring windows as the harness asks, and reports its own throughput: what a
// tracer costs shows up as less of it.
package load

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// Result is one measuring window of a workload.
type Result struct {
	// OpsPerSec is the workload's throughput: syscalls, round trips, transactions or
	// units of work per second, as the workload defines them.
	OpsPerSec float64 `json:"ops_per_sec"`
	// P50Us and P99Us are operation latency percentiles, for workloads that time each op.
	P50Us float64 `json:"p50_us,omitempty"`
	P99Us float64 `json:"p99_us,omitempty"`
}

// Workload is a load the harness runs.
type Workload interface {
	// Run works for d and reports the throughput of that window.
	Run(d time.Duration) (Result, error)
	// Close ends every thread the workload started.
	Close() error
}

// onThreads runs body on n goroutines, each locked to an OS thread of its own (a
// workload's unit is a thread, as in the servers it stands for), and waits for all.
// Each body returns how many operations it completed.
func onThreads(n int, body func(i int) int64) int64 {
	var wg sync.WaitGroup
	counts := make([]int64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Never unlocked: the thread ends with the goroutine, so that none that a body
			// pinned to a CPU goes back to the Go scheduler's pool.
			runtime.LockOSThread()
			counts[i] = body(i)
		}()
	}
	wg.Wait()
	var total int64
	for _, c := range counts {
		total += c
	}
	return total
}

// percentile is the p-th percentile (0 < p < 1) of sorted, by nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// latencies turns per-op durations into the result's percentiles, in microseconds.
func latencies(r *Result, d []time.Duration) {
	slices.Sort(d)
	r.P50Us = float64(percentile(d, 0.50)) / float64(time.Microsecond)
	r.P99Us = float64(percentile(d, 0.99)) / float64(time.Microsecond)
}
