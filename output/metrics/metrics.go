// SPDX-License-Identifier: Apache-2.0

// Package metrics is threadcap's Prometheus endpoint: the daemon's health (ticks, rows,
// bytes, a paused writer, the kernel side's slots and losses, its programs' run time) and
// the machine's activity (thread-seconds by state and process, from the rows' exact state
// times). The sampler tells it of every tick (it is a sampler.Observer); the writer and the
// kernel side are read at each scrape. Its registry is the caller's: nothing is global.
package metrics

import (
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
)

// DefaultTopProcesses is how many processes have a label of their own unless configured.
const DefaultTopProcesses = 20

// WriterStats is the writer as a scrape reads it; *output.Writer implements it.
type WriterStats interface {
	Stats() output.Stats
}

// ProgramStats is the kernel side as a scrape reads it; *bpf.Tracker implements it.
type ProgramStats interface {
	ProgramStats() ([]bpf.ProgramStats, error)
}

// Backlog is the shipping of closed hours as a scrape reads it; *ship.Shipper implements it.
type Backlog interface {
	Backlog() ([]hourfile.File, error)
}

// Config is what the metrics describe.
type Config struct {
	// TopProcesses is how many processes have a label of their own in the activity
	// metrics; the others count as Other.
	TopProcesses int
	// Capacity is how many threads the kernel side can track at once.
	Capacity uint32
	Writer   WriterStats
	// Programs and StatsEnabled give the programs' run counts, exported while
	// StatsEnabled says the kernel keeps them (kernel.bpf_stats_enabled=1).
	Programs     ProgramStats
	StatsEnabled func() bool
	// Shipping is the shipper's backlog; nil when shipping is off.
	Shipping Backlog
	Version  string
}

// Metrics collects everything the endpoint shows. Register it with a registry.
type Metrics struct {
	cfg      Config
	activity *activity
	units    *activity // the same, by systemd unit
	tickTook prometheus.Histogram

	mu   sync.Mutex
	last sampler.TickReport // the last tick's
}

// New makes the metrics of one run.
func New(cfg Config) *Metrics {
	return &Metrics{
		cfg:      cfg,
		activity: newActivity(cfg.TopProcesses),
		units:    newActivityBy(cfg.TopProcesses, func(r *state.Sample) string { return r.Unit }),
		tickTook: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "threadcap_tick_duration_seconds",
			Help: "How long each tick took, from its start to its rows handed to the writer.",
			// From a few idle threads at 100 Hz to tens of thousands of threads.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
}

// Rows counts a batch of a tick's rows in the activity metrics (sampler.Observer).
func (m *Metrics) Rows(tick time.Time, rows []state.Sample) {
	m.activity.add(tick, rows)
	m.units.add(tick, rows)
}

// Ticked keeps the counts after a tick (sampler.Observer).
func (m *Metrics) Ticked(r sampler.TickReport) {
	m.tickTook.Observe(r.Took.Seconds())
	m.mu.Lock()
	m.last = r
	m.mu.Unlock()
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	buildInfo   = desc("threadcap_build_info", "Always 1: the version threadcap was built from, and the Go release.", "version", "goversion")
	ticks       = desc("threadcap_ticks_total", "Ticks taken.")
	skipped     = desc("threadcap_ticks_skipped_total", "Ticks not taken because the tick before ran past them.")
	rows        = desc("threadcap_rows_total", "Rows the sampler made.")
	written     = desc("threadcap_rows_written_total", "Rows that reached an hour file.")
	dropped     = desc("threadcap_rows_dropped_total", "Rows not written: the disk was full or below output.min_free_bytes, or a write failed.")
	bytesOut    = desc("threadcap_written_bytes_total", "Bytes written to each kind of hour file, before compression.", "file")
	paused      = desc("threadcap_writing_paused", "1 while rows are dropped for this cause (no_space, read_only, write_error), else 0.", "cause")
	tracked     = desc("threadcap_thread_slots_used", "Threads holding one of the kernel side's records.")
	capacity    = desc("threadcap_thread_slots", "Threads the kernel side can track at once (capacity).")
	untracked   = desc("threadcap_untracked_threads_total", "Threads refused a record because every slot was taken: they have no rows.")
	lostUpdates = desc("threadcap_lost_updates_total", "Events about threads that had no record.")
	lostStacks  = desc("threadcap_lost_stacks_total", "Stacks not captured because their bucket in the stack map held another.")
	stackless   = desc("threadcap_stackless_rows_total", "Rows that should carry a kernel stack and have none.")
	unseen      = desc("threadcap_unseen_switches_total", "Switches the kernel reported no event for, repaired from its CPU time.")
	defects     = desc("threadcap_record_defects_total",
		"Should stay 0: records skipped at a tick because every copy within the retry budget was torn (torn_read), "+
			"left claimed by a write that never ended and released (recovered), and a thread's own events not written "+
			"because its record stayed claimed (write_conflict).", "kind")
	seeded     = desc("threadcap_seeded_threads", "Threads known from /proc only, not yet seen by the kernel side.")
	backlog    = desc("threadcap_ship_backlog_files", "Closed hour files not shipped yet (while shipping is on); retention keeps them.")
	progRuns   = desc("threadcap_bpf_program_runs_total", "Runs of each BPF program (while kernel.bpf_stats_enabled=1).", "program")
	progTime   = desc("threadcap_bpf_program_run_seconds_total", "Run time of each BPF program (while kernel.bpf_stats_enabled=1).", "program")
	threadSecs = desc("threadcap_thread_seconds_total",
		"Seconds threads spent in each state, from the rows' exact state times: rate() is the average number of threads in the state. "+
			"The top processes by activity have a label of their own, the rest are process=\"other\"; state=\"on_cpu\" is CPU seconds.",
		"process", "state")
	sessions = desc("threadcap_active_sessions_total",
		"Rows that were active sessions (on CPU, runnable or uninterruptible at the tick, or inside a span), summed over the ticks: "+
			"rate() of it over rate(threadcap_ticks_total) is the average active threads, as threadcap report counts them. "+
			"kind is on_cpu, runnable, uninterruptible, sleeping_in_span or stopped_in_span; processes are labelled as in threadcap_thread_seconds_total.",
		"process", "kind")
	unitSecs = desc("threadcap_unit_thread_seconds_total",
		"threadcap_thread_seconds_total by systemd unit or scope (the unit column) instead of process: "+
			"the top units by activity have a label of their own, the rest (and rows without a unit) are unit=\"other\".",
		"unit", "state")
)

// Describe sends every metric's description (prometheus.Collector).
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		buildInfo, ticks, skipped, rows, written, dropped, bytesOut, paused, tracked, capacity, untracked,
		lostUpdates, lostStacks, stackless, unseen, defects, seeded, backlog, progRuns, progTime, threadSecs, sessions, unitSecs,
	} {
		ch <- d
	}
	m.tickTook.Describe(ch)
}

// Collect sends every metric's value (prometheus.Collector). It reads the writer without
// its lock, so a writer stuck on its disk is still reported.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(buildInfo, 1, m.cfg.Version, runtime.Version())

	m.mu.Lock()
	r := m.last
	m.mu.Unlock()
	st := r.Stats
	counter(ticks, float64(st.Ticks))
	counter(skipped, float64(st.SkippedTicks))
	counter(rows, float64(st.Rows))
	counter(untracked, float64(st.UntrackedThreads))
	counter(lostUpdates, float64(st.LostUpdates))
	counter(lostStacks, float64(st.LostStacks))
	counter(stackless, float64(st.StacklessRows))
	counter(unseen, float64(st.UnseenSwitches))
	counter(defects, float64(st.TornReads), "torn_read")
	counter(defects, float64(st.RecoveredRecords), "recovered")
	counter(defects, float64(st.WriteConflicts), "write_conflict")
	gauge(tracked, float64(r.Tracked))
	gauge(capacity, float64(m.cfg.Capacity))
	gauge(seeded, float64(r.Seeded))
	m.tickTook.Collect(ch)

	ws := m.cfg.Writer.Stats()
	counter(written, float64(ws.WrittenRows))
	counter(dropped, float64(ws.DroppedRows))
	for kind, n := range ws.Bytes {
		counter(bytesOut, float64(n), kind.String())
	}
	for _, cause := range output.PauseCauses() {
		v := 0.0
		if ws.Paused == cause {
			v = 1
		}
		gauge(paused, v, cause)
	}

	m.collectPrograms(ch)
	m.collectBacklog(ch)

	for _, p := range m.activity.snapshot() {
		for st, secs := range p.seconds {
			counter(threadSecs, secs, p.process, state.State(st).String())
		}
		for kind, n := range p.sessions {
			counter(sessions, float64(n), p.process, schema.SessionName(kind))
		}
	}
	for _, u := range m.units.snapshot() {
		for st, secs := range u.seconds {
			counter(unitSecs, secs, u.process, state.State(st).String())
		}
	}
}

// collectBacklog sends the number of hours waiting to be shipped, while shipping is on;
// a failed listing fails the scrape with the reason.
func (m *Metrics) collectBacklog(ch chan<- prometheus.Metric) {
	if m.cfg.Shipping == nil {
		return
	}
	files, err := m.cfg.Shipping.Backlog()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(backlog, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(backlog, prometheus.GaugeValue, float64(len(files)))
}

// collectPrograms sends the programs' run counts while the kernel keeps them; a failed
// read sends an invalid metric, which fails the scrape with the reason.
func (m *Metrics) collectPrograms(ch chan<- prometheus.Metric) {
	if m.cfg.Programs == nil || m.cfg.StatsEnabled == nil || !m.cfg.StatsEnabled() {
		return
	}
	progs, err := m.cfg.Programs.ProgramStats()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(progRuns, err)
		return
	}
	for _, p := range progs {
		ch <- prometheus.MustNewConstMetric(progRuns, prometheus.CounterValue, float64(p.Runs), p.Name)
		ch <- prometheus.MustNewConstMetric(progTime, prometheus.CounterValue, p.Runtime.Seconds(), p.Name)
	}
}
