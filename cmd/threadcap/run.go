// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/ship"
	"github.com/threadcap/threadcap/sampler"
)

// Log field keys.
const (
	fieldComponent = "component"
	fieldChanged   = "changed"
	fieldRestart   = "needs_restart"
	fieldTicks     = "ticks"
	// The stop line's counts of stacks.
	fieldLostStacks    = "lost_stacks"
	fieldStackRows     = "stack_rows"
	fieldStacklessRows = "stackless_rows"
)

// runCommand is `threadcap run`: it samples until SIGINT or SIGTERM.
func runCommand(args []string) int {
	opts, cfg, err := config.Settings("run", args)
	if err != nil {
		return exitCode(err)
	}
	// The spans' probes are looked for in their binaries before anything starts: one
	// missing is a mistake in the config.
	spanNames, spanProbes, err := cfg.SpanProbes()
	if err != nil {
		return exitCode(err)
	}
	setupLogging(&cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := run(ctx, opts, cfg, spanSet{spanNames, spanProbes}, hup); err != nil {
		if errors.As(err, new(config.UsageError)) {
			return exitCode(err)
		}
		logrus.WithField(fieldComponent, "threadcap").WithError(err).Error("threadcap stopped")
		return exitFailure
	}
	return 0
}

// setupLogging applies the log settings; SIGHUP calls it again.
func setupLogging(c *config.Config) {
	level, _ := logrus.ParseLevel(c.Log.Level) // checked by Validate
	logrus.SetLevel(level)
	if c.Log.Format == "json" {
		logrus.SetFormatter(&logrus.JSONFormatter{})
	} else {
		logrus.SetFormatter(&logrus.TextFormatter{})
	}
}

// run samples until ctx ends, reloading the config at each signal on hup, then flushes the
// current file and detaches everything.
func run(ctx context.Context, opts *config.Options, cfg config.Config, spans spanSet, hup <-chan os.Signal) (err error) {
	log := logrus.WithField(fieldComponent, "threadcap")
	log.WithFields(cfg.Fields()).Info("starting")
	if err := requireCapabilities(); err != nil {
		return err
	}
	// Warned of, not refused: its rows are wrong there, but not the rest of what it does
	// (the unit's life, the files, a clean stop), which a container that cannot share the
	// host's PID namespace (systemd-nspawn's) may run it to try. When /proc cannot say,
	// `threadcap check` does.
	if why, _ := ownPIDNamespace("/proc"); why != "" {
		log.Warn(why + "; " + pidNamespaceFix)
	}
	metricsServer, err := listenMetrics(&cfg)
	if err != nil {
		return err
	}
	// Once serving, it is stopped before the tracker and the writer close too (below): a
	// scrape reads both.
	defer func() { err = errors.Join(err, metricsServer.Close()) }()

	shipper, err := newShipper(&cfg)
	if err != nil {
		return err
	}
	wcfg := cfg.Writer(logrus.WithField(fieldComponent, "output"))
	if shipper != nil {
		wcfg.Hold = shipper.Held
	}
	// The directory is taken first, so that a second instance stops before loading anything.
	writer, err := output.New(wcfg)
	if errors.Is(err, output.ErrDirInUse) {
		return dirInUse(cfg.Dir, err)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, writer.Close()) }()
	if shipper != nil {
		shipCtx, stopShip := context.WithCancel(ctx)
		shipped := make(chan struct{})
		go func() { defer close(shipped); shipper.Run(shipCtx) }()
		defer func() { stopShip(); <-shipped; err = errors.Join(err, shipper.Close()) }()
	}

	trackerCfg := cfg.Tracker()
	trackerCfg.Spans = spans.probes
	tracker, err := bpf.Open(trackerCfg)
	if err != nil {
		return err
	}
	var spanSource sampler.SpanSource
	if len(spans.probes) > 0 {
		spanSource = tracker
		log.WithField("spans", strings.Join(spans.names, ",")).WithField("probe_sites", len(spans.probes)).Info("span probes attached")
	}
	// Closed before the writer: nothing is attached while the last file is flushed.
	defer func() { err = errors.Join(err, tracker.Close()) }()
	// Open refused a kernel without what is required: what is left is done without.
	missing, _ := bpf.Missing(cfg.Tracker().Syscalls)
	for _, f := range missing {
		log.WithFields(logrus.Fields{"feature": f.Name, "since": "Linux " + f.Since}).Warn("kernel lacks a feature: " + f.Without)
	}

	observer, registry := newMetrics(metricsServer, &cfg, tracker, writer, shipper)
	var io sampler.IOSource
	if cfg.IO {
		io = tracker
	}
	tcp, err := openTCPSockets(cfg.Columns.FdTarget, log)
	if err != nil {
		return err
	}
	var tcpSource sampler.TCPSource
	if tcp != nil {
		tcpSource = tcp
		defer func() { err = errors.Join(err, tcp.Close()) }()
	}
	s, err := sampler.New(sampler.Config{
		Interval:   cfg.Interval(),
		Filter:     filterOf(&cfg),
		Self:       int32(os.Getpid()),
		NoCgroup:   !cfg.Columns.Cgroup,
		NoFdTarget: !cfg.Columns.FdTarget,
		Mono:       bpf.Now, Wall: time.Now,
		Stacks:       tracker,
		StackStates:  tracker.StackStates(),
		StackEntries: cfg.Stacks.Entries,
		IO:           io,
		TCP:          tcpSource,
		TCPNames:     tcpSource != nil,
		Spans:        spanSource,
		SpanNames:    spans.names,
		SpanSink:     writer,
		Log:          logrus.WithField(fieldComponent, "sampler"),
		Observer:     observer,
	}, tracker, writer)
	if err != nil {
		return err
	}
	stopProfile, err := startProfile(ctx, cfg.Profile.Hz, tracker, spans.names, writer, logrus.WithField(fieldComponent, "profile"))
	if err != nil {
		return err
	}
	// Its last minute is written before the writer closes.
	defer func() { err = errors.Join(err, stopProfile()) }()
	serveMetrics(metricsServer, registry)
	// On an early return, stopped before the deferred closes of the tracker and writer.
	defer metricsServer.Close()
	// Seeding reads every thread in /proc: on a loaded machine with many threads it can
	// take seconds, and SIGTERM must not wait for it. Abandoned, it only reads /proc.
	seeded := make(chan error, 1)
	go func() {
		// The hook-free mode reads every thread at its first tick: nothing to guess from
		// /proc, where a thread that exits before that tick would keep its seeded row.
		if cfg.Syscalls == bpf.SyscallsTick {
			seeded <- nil
			return
		}
		seeded <- s.Seed()
	}()
	select {
	case <-ctx.Done():
		log.Info("stopped while starting")
		return nil
	case err := <-seeded:
		if err != nil {
			return err
		}
	}

	d := &daemon{opts: opts, cfg: cfg, sampler: s, writer: writer, log: log}
	bg, stopBg := context.WithCancel(ctx)
	reloader := make(chan struct{})
	go func() {
		defer close(reloader)
		d.reloadOn(bg, hup)
	}()

	notify(log, "READY=1")
	err = s.Run(ctx)
	notify(log, "STOPPING=1")
	stopBg()
	// The kernel side's counts as it stops, for the stop line; the sampler reported them
	// as they grew.
	var c bpf.Counters
	if kc, cerr := tracker.Counters(); cerr == nil {
		c = kc
	} else {
		c.TornReads, c.RecoveredRecords = tracker.TornReads(), tracker.RecoveredRecords()
	}
	spanLosses, _ := tracker.SpanCounters()
	// Closed here rather than by the deferred calls (which then do nothing), to log how
	// long each step of stopping took.
	began := time.Now()
	err = errors.Join(err, metricsServer.Close(), tracker.Close())
	detached := time.Now()
	err = errors.Join(err, stopProfile(), writer.Close())
	// Waited for only now: a reload may be waiting for a compression, which Close cancels.
	// What it applies after Close is never used.
	<-reloader
	st := s.Stats()
	log.WithFields(logrus.Fields{
		fieldTicks: st.Ticks, "rows": st.Rows, "skipped_ticks": st.SkippedTicks,
		"written_rows": writer.WrittenRows(), "dropped_rows": writer.DroppedRows(),
		fieldLostStacks: c.LostStacks, fieldStackRows: st.StackRows, fieldStacklessRows: st.StacklessRows,
		"unseen_switches": c.UnseenSwitches, "torn_reads": c.TornReads, "recovered_records": c.RecoveredRecords,
		"write_conflicts":  c.WriteConflicts,
		"span_starts_lost": spanLosses.NoRecord + spanLosses.NoRoom, "span_ends_missed": spanLosses.MissedEnds,
		"span_ends_unmatched": spanLosses.Unmatched,
		"detach_ms":           detached.Sub(began).Milliseconds(), "flush_ms": time.Since(detached).Milliseconds(),
		"longest_pass_us": st.LongestPass.Microseconds(),
	}).Info("stopped")
	return err
}

// spanSet is the spans found in their binaries: names in span id order, and their
// probe sites.
type spanSet struct {
	names  []string
	probes []bpf.SpanProbe
}

func filterOf(c *config.Config) sampler.Filter {
	return sampler.Filter{All: c.All, Pids: c.Pids, Processes: c.Processes, Cgroups: c.Cgroups}
}

// dirInUse names the process that holds dir, when /proc/locks tells.
func dirInUse(dir string, err error) error {
	if pid, ok := lockHolder(dir); ok {
		return fmt.Errorf("%s is in use by another threadcap (pid %d): stop it, or give this one another --dir", dir, pid)
	}
	return fmt.Errorf("%w: stop the other threadcap, or give this one another --dir", err)
}

// newShipper is the shipper of closed Parquet hours, nil when shipping is off. Credentials
// that cannot be had are a config mistake (exit code 2).
func newShipper(cfg *config.Config) (*ship.Shipper, error) {
	if cfg.Ship.Endpoint == "" {
		return nil, nil
	}
	creds, err := ship.LoadCredentials(cfg.Ship.CredentialsFile)
	if err != nil {
		return nil, config.UsageError{Err: err}
	}
	return ship.New(cfg.Shipper(logrus.WithField(fieldComponent, "ship")), creds)
}

// openTCPSockets opens the kernel side of the tcp_ columns, which fd_target's rows need.
// A kernel that cannot read sockets in BPF (older than 6.2) leaves it nil: the sampler
// asks sock_diag instead.
func openTCPSockets(fdTarget bool, log *logrus.Entry) (*bpf.TCPSockets, error) {
	if !fdTarget {
		return nil, nil
	}
	tcp, err := bpf.OpenTCPSockets()
	if errors.Is(err, bpf.ErrNoTCPSockets) {
		log.WithError(err).Warn("the tcp_ columns are read through sock_diag: some 4 µs a row, and only in network namespaces threadcap can enter")
		return nil, nil
	}
	return tcp, err
}
