// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// sample is one measuring window of one workload under one configuration.
type sample struct {
	round      int
	ops        float64
	p50, p99   float64 // µs; zero when the workload does not time its ops
	threads    int     // threads on the machine during the window
	daemon     bool    // the fields below are set
	startup    time.Duration
	cpuPerTick float64 // ns of daemon CPU per tick; NaN when no tick fell in the window
	cpuShare   float64 // daemon CPU over wall time: 1 is a whole core
	hwmKB      int64
	csvPerHour float64 // bytes; NaN when an hour file was closed during the window
	// foreign is how many tracing BPF programs not the benchmark's were loaded just
	// before the configuration was attached.
	foreign int
}

// results holds every sample by workload, then configuration.
type results map[string]map[string][]sample

// disturbed counts the windows that ran with another tracer's programs loaded, of all.
func (r results) disturbed() (n, of int) {
	for _, byConfig := range r {
		for _, samples := range byConfig {
			for _, s := range samples {
				of++
				if s.foreign > 0 {
					n++
				}
			}
		}
	}
	return n, of
}

func (r results) add(workload, config string, s sample) {
	if r[workload] == nil {
		r[workload] = map[string][]sample{}
	}
	r[workload][config] = append(r[workload][config], s)
}

// suite is one benchmark run.
type suite struct {
	opt     options
	configs []config
	res     results
	log     *logrus.Entry
	// primer is a mix workload run before each window of the daemon; see warmUp.
	primer *worker
}

// rotated is the order of the configurations in round r: each takes every position in
// turn, so that a slow spell of the machine does not fall on one of them.
func (s *suite) rotated(r int) []config {
	n := len(s.configs)
	out := make([]config, n)
	for i := range n {
		out[i] = s.configs[(i+r)%n]
	}
	return out
}

// workloadSpec names a workload and the arguments of its process.
type workloadSpec struct {
	name string
	args []string
}

// throughput runs the hot-path workloads: in each round, each configuration is attached
// once and every workload measured under it.
func (s *suite) throughput(specs []workloadSpec) error {
	workers := make([]*worker, len(specs))
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.Close()
			}
		}
	}()
	for i, sp := range specs {
		w, err := startWorker(sp.name, sp.args...)
		if err != nil {
			return err
		}
		workers[i] = w
	}
	for r := range s.opt.rounds {
		for _, c := range s.rotated(r) {
			s.log.WithFields(logrus.Fields{"round": r + 1, "config": c.name}).Info("hot-path workloads")
			t, startup, foreign, err := s.start(c)
			if err != nil {
				return err
			}
			for i, w := range workers {
				sm, err := s.measure(w, t, c, s.opt.window)
				if err != nil {
					t.Close()
					return fmt.Errorf("%s under %s: %w", specs[i].name, c.name, err)
				}
				sm.round, sm.startup, sm.foreign = r, startup, foreign
				s.res.add(specs[i].name, c.name, sm)
			}
			if err := t.Close(); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	return nil
}

// scale runs the many-threads workload at one size: the daemon is started with every
// thread already there (seeding them is part of its start-up), then every idle thread is
// woken once, as idle threads on a server now and then are, and the window measured once
// that is behind the daemon's last tick.
func (s *suite) scale(threads, busy int) error {
	name := fmt.Sprintf("scale %d", threads)
	w, err := startWorker(name, "scale", "-idle", strconv.Itoa(threads-busy), "-busy", strconv.Itoa(busy))
	if err != nil {
		return err
	}
	defer w.Close()
	for r := range s.opt.scaleRounds {
		for _, c := range s.rotated(r) {
			if c.settings != "" {
				continue // the enrichments' cost is shown by the hot-path workloads
			}
			s.log.WithFields(logrus.Fields{"round": r + 1, "config": c.name, "threads": threads}).Info("scale workload")
			t, startup, foreign, err := s.start(c)
			if err != nil {
				return err
			}
			if err := w.wake(); err != nil {
				t.Close()
				return err
			}
			t.settle()
			sm, err := s.measure(w, t, c, s.opt.scaleWindow)
			if cerr := t.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s under %s: %w", name, c.name, err)
			}
			sm.round, sm.startup, sm.foreign = r, startup, foreign
			s.res.add(name, c.name, sm)
		}
	}
	return nil
}

// start puts c in effect and brings it to steady state. foreign is how many tracing BPF
// programs not the benchmark's were loaded just before.
func (s *suite) start(c config) (t tracer, startup time.Duration, foreign int, err error) {
	foreign = foreignTracers()
	t, startup, err = attach(c, s.opt)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", c.name, err)
	}
	if err := s.warmUp(c, t); err != nil {
		t.Close()
		return nil, 0, 0, err
	}
	return t, startup, foreign, nil
}

// warmUp brings a just started daemon to steady state. Its first ticks fill its caches,
// and in the background it reads the kernel's symbols, some 150 ms of CPU once: start-up
// costs, which would otherwise land in the first window. The mix workload's commits
// (fdatasync) put threads in D state at its ticks, so its first stacks are behind it too.
func (s *suite) warmUp(c config, t tracer) error {
	if c.daemon() {
		interval := time.Second / time.Duration(c.hz)
		if _, err := s.primer.run(max(time.Second, 2*interval)); err != nil {
			return fmt.Errorf("warming up %s: %w", c.name, err)
		}
	}
	t.settle()
	return nil
}

// measure runs one window of w under t, configuration c.
func (s *suite) measure(w *worker, t tracer, c config, d time.Duration) (sample, error) {
	threads := machineThreads()
	before, err := t.mark()
	if err != nil {
		return sample{}, err
	}
	res, err := w.run(d)
	if err != nil {
		return sample{}, err
	}
	after, err := t.mark()
	if err != nil {
		return sample{}, err
	}
	sm := sample{ops: res.OpsPerSec, p50: res.P50Us, p99: res.P99Us, threads: threads, daemon: c.daemon()}
	if !c.daemon() {
		return sm, nil
	}
	wall := after.at.Sub(before.at).Seconds()
	cpu := float64(after.cpuNs - before.cpuNs)
	sm.cpuShare = cpu / 1e9 / wall
	// Ticks fall on wall-clock multiples of the interval, so the window's are counted
	// exactly.
	interval := time.Second / time.Duration(c.hz)
	ticks := after.at.Truncate(interval).Sub(before.at.Truncate(interval)) / interval
	sm.cpuPerTick = math.NaN() // no tick fell in the window
	if ticks > 0 {
		sm.cpuPerTick = cpu / float64(ticks)
	}
	sm.hwmKB = after.hwmKB
	sm.csvPerHour = csvGrowth(before.csvBytes, after.csvBytes) / wall * 3600
	return sm, nil
}

// csvGrowth is how many bytes the hour files grew by between two readings, NaN when a
// file went away meanwhile (its hour ended and it was compressed).
func csvGrowth(before, after map[string]int64) float64 {
	var grown int64
	for name, n := range after {
		grown += n - before[name]
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			return math.NaN()
		}
	}
	return float64(grown)
}

// machineThreads is how many threads the machine runs (/proc/loadavg's
// "running/total" field), what the daemon's per-thread cost is divided by.
func machineThreads() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0
	}
	_, total, _ := strings.Cut(f[3], "/")
	n, _ := strconv.Atoi(total)
	return n
}
