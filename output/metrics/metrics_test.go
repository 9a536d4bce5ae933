// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
)

type fakeWriter output.Stats

func (f fakeWriter) Stats() output.Stats { return output.Stats(f) }

type fakePrograms struct {
	progs []bpf.ProgramStats
	err   error
}

func (f fakePrograms) ProgramStats() ([]bpf.ProgramStats, error) { return f.progs, f.err }

// newTestMetrics are metrics over a writer paused for lack of space and two programs.
func newTestMetrics(statsOn bool, progErr error) *Metrics {
	return New(Config{
		TopProcesses: 1, Capacity: 4096, Version: "v1.2.3",
		Writer: fakeWriter{WrittenRows: 90, DroppedRows: 10, Paused: output.PausedNoSpace,
			Bytes: map[hourfile.Kind]uint64{hourfile.Samples: 5000, hourfile.Stacks: 300, hourfile.Ticks: 40}},
		Programs: fakePrograms{progs: []bpf.ProgramStats{
			{Name: "on_switch", Runs: 1000, Runtime: 130 * time.Microsecond},
			{Name: "on_wakeup", Runs: 500, Runtime: 20 * time.Microsecond},
		}, err: progErr},
		StatsEnabled: func() bool { return statsOn },
	})
}

// TestScrapeShowsWhatItWasTold: each metric a dashboard or an alert reads, as the text a
// scrape returns.
func TestScrapeShowsWhatItWasTold(t *testing.T) {
	m := newTestMetrics(true, nil)
	m.Rows(time.Unix(100, 0), []state.Sample{
		{Process: "postgres", StateTimeUs: [state.TimedStates]int64{state.OnCPU: 250_000, state.Uninterruptible: 750_000}},
		{Process: "sh", StateTimeUs: [state.TimedStates]int64{state.Runnable: 1_000_000}},
	})
	m.Ticked(sampler.TickReport{Took: 3 * time.Millisecond, Tracked: 12, Seeded: 2, Stats: sampler.Stats{
		Ticks: 7, SkippedTicks: 1, Rows: 100, UntrackedThreads: 3, LostUpdates: 4, LostStacks: 5, UnseenSwitches: 6,
		StackRows: 20, StacklessRows: 2,
	}})
	want := `
# HELP threadcap_ticks_total Ticks taken.
# TYPE threadcap_ticks_total counter
threadcap_ticks_total 7
# HELP threadcap_ticks_skipped_total Ticks not taken because the tick before ran past them.
# TYPE threadcap_ticks_skipped_total counter
threadcap_ticks_skipped_total 1
# HELP threadcap_rows_dropped_total Rows not written: the disk was full or below output.min_free_bytes, or a write failed.
# TYPE threadcap_rows_dropped_total counter
threadcap_rows_dropped_total 10
# HELP threadcap_written_bytes_total Bytes written to each kind of hour file, before compression.
# TYPE threadcap_written_bytes_total counter
threadcap_written_bytes_total{file="samples"} 5000
threadcap_written_bytes_total{file="stacks"} 300
threadcap_written_bytes_total{file="ticks"} 40
# HELP threadcap_writing_paused 1 while rows are dropped for this cause (no_space, read_only, write_error), else 0.
# TYPE threadcap_writing_paused gauge
threadcap_writing_paused{cause="no_space"} 1
threadcap_writing_paused{cause="read_only"} 0
threadcap_writing_paused{cause="write_error"} 0
# HELP threadcap_thread_slots_used Threads holding one of the kernel side's records.
# TYPE threadcap_thread_slots_used gauge
threadcap_thread_slots_used 12
# HELP threadcap_thread_slots Threads the kernel side can track at once (capacity).
# TYPE threadcap_thread_slots gauge
threadcap_thread_slots 4096
# HELP threadcap_untracked_threads_total Threads refused a record because every slot was taken: they have no rows.
# TYPE threadcap_untracked_threads_total counter
threadcap_untracked_threads_total 3
# HELP threadcap_lost_stacks_total Stacks not captured because their bucket in the stack map held another.
# TYPE threadcap_lost_stacks_total counter
threadcap_lost_stacks_total 5
# HELP threadcap_bpf_program_run_seconds_total Run time of each BPF program (while kernel.bpf_stats_enabled=1).
# TYPE threadcap_bpf_program_run_seconds_total counter
threadcap_bpf_program_run_seconds_total{program="on_switch"} 0.00013
threadcap_bpf_program_run_seconds_total{program="on_wakeup"} 2e-05
# HELP threadcap_thread_seconds_total Seconds threads spent in each state, from the rows' exact state times: rate() is the average number of threads in the state. The top processes by activity have a label of their own, the rest are process="other"; state="on_cpu" is CPU seconds.
# TYPE threadcap_thread_seconds_total counter
threadcap_thread_seconds_total{process="other",state="on_cpu"} 0
threadcap_thread_seconds_total{process="other",state="runnable"} 1
threadcap_thread_seconds_total{process="other",state="sleeping"} 0
threadcap_thread_seconds_total{process="other",state="stopped"} 0
threadcap_thread_seconds_total{process="other",state="uninterruptible"} 0
threadcap_thread_seconds_total{process="postgres",state="on_cpu"} 0.25
threadcap_thread_seconds_total{process="postgres",state="runnable"} 0
threadcap_thread_seconds_total{process="postgres",state="sleeping"} 0
threadcap_thread_seconds_total{process="postgres",state="stopped"} 0
threadcap_thread_seconds_total{process="postgres",state="uninterruptible"} 0.75
`
	names := []string{
		"threadcap_ticks_total", "threadcap_ticks_skipped_total", "threadcap_rows_dropped_total",
		"threadcap_written_bytes_total", "threadcap_writing_paused", "threadcap_thread_slots_used", "threadcap_thread_slots",
		"threadcap_untracked_threads_total", "threadcap_lost_stacks_total", "threadcap_bpf_program_run_seconds_total",
		"threadcap_thread_seconds_total",
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "threadcap_tick_duration_seconds"); n != 1 {
		t.Errorf("%d tick duration histograms, want 1", n)
	}
	problems, err := testutil.CollectAndLint(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestProgramStatsOnlyWhileTheKernelKeepsThem: without kernel.bpf_stats_enabled the
// counts are frozen or zero, and no series claims otherwise; a failed read fails the
// scrape rather than showing made-up zeros.
func TestProgramStatsOnlyWhileTheKernelKeepsThem(t *testing.T) {
	if n := testutil.CollectAndCount(newTestMetrics(false, nil), "threadcap_bpf_program_runs_total"); n != 0 {
		t.Errorf("%d program series with bpf stats off, want none", n)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newTestMetrics(true, errors.New("bad fd")))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "bad fd") {
		t.Errorf("gathering with a failed program read: %v, want its error", err)
	}
}

type fakeBacklog struct {
	files []hourfile.File
	err   error
}

func (f fakeBacklog) Backlog() ([]hourfile.File, error) { return f.files, f.err }

// TestShipBacklogWhileShipping: the hours waiting to be shipped are a gauge while shipping
// is on, absent while it is off, and a failed listing fails the scrape with its reason.
func TestShipBacklogWhileShipping(t *testing.T) {
	if n := testutil.CollectAndCount(newTestMetrics(false, nil), "threadcap_ship_backlog_files"); n != 0 {
		t.Errorf("%d backlog series with shipping off, want none", n)
	}
	m := newTestMetrics(false, nil)
	m.cfg.Shipping = fakeBacklog{files: make([]hourfile.File, 3)}
	want := `
# HELP threadcap_ship_backlog_files Closed hour files not shipped yet (while shipping is on); retention keeps them.
# TYPE threadcap_ship_backlog_files gauge
threadcap_ship_backlog_files 3
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "threadcap_ship_backlog_files"); err != nil {
		t.Error(err)
	}
	m.cfg.Shipping = fakeBacklog{err: errors.New("permission denied")}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("gathering with a failed listing: %v, want its error", err)
	}
}
