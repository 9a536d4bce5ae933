// SPDX-License-Identifier: Apache-2.0

// Command bench measures what threadcap costs: the throughput of workloads with no
// tracer, with empty programs on threadcap's hooks (the floor) and with the threadcap
// daemon in each syscall mode and at each rate, interleaved round by round; and the
// daemon's own CPU per tick, memory, output volume and start-up time. It prints a
// Markdown table and writes it to a file. It needs root. See BENCHMARKS.md.
//
//	go build -o threadcap ./cmd/threadcap && CGO_ENABLED=0 go build -o bench ./test/bench
//	sudo ./bench --daemon ./threadcap
//
// Without cgo, Go starts threads with clone(2) and stacks from its heap; with it, every
// thread of the scale workload gets a pthread stack of its own, two memory mappings, and
// 50,000 threads need more than vm.max_map_count allows.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// options are the command line.
type options struct {
	daemon, out, tmp         string
	rounds, scaleRounds      int
	window, scaleWindow      time.Duration
	rates, scale             []int
	busy                     int
	syscallThreads, mixUsers int
}

func parseOptions(args []string) (options, error) {
	o := options{out: "bench-results.md", tmp: os.TempDir(), rounds: 5, scaleRounds: 3,
		window: time.Second, scaleWindow: 2 * time.Second, busy: 100,
		rates: []int{1, 20}, scale: []int{1000, 10000, 50000},
		syscallThreads: runtime.NumCPU(), mixUsers: 4}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.daemon, "daemon", "", "the threadcap binary to measure (go build ./cmd/threadcap)")
	fs.StringVar(&o.out, "out", o.out, "file the Markdown results are written to, as well as stdout")
	fs.StringVar(&o.tmp, "tmp", o.tmp, "where the daemon's CSV files and the mix workload's data file go")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "rounds of the hot-path workloads")
	fs.DurationVar(&o.window, "window", o.window, "measuring window of a hot-path workload")
	fs.IntVar(&o.scaleRounds, "scale-rounds", o.scaleRounds, "rounds of each scale workload")
	fs.DurationVar(&o.scaleWindow, "scale-window", o.scaleWindow, "measuring window of a scale workload")
	fs.Func("rates", "daemon rates in Hz, comma-separated (default 1,20)", intList(&o.rates))
	fs.Func("scale", "threads of the scale workloads, comma-separated; empty for none (default 1000,10000,50000)", intList(&o.scale))
	fs.IntVar(&o.busy, "busy", o.busy, "busy threads of each scale workload")
	fs.IntVar(&o.syscallThreads, "syscall-threads", o.syscallThreads, "threads of the syscall storm")
	fs.IntVar(&o.mixUsers, "mix-workers", o.mixUsers, "worker threads of the mix workload")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.daemon == "" {
		errs = append(errs, errors.New("--daemon: give the threadcap binary to measure (go build ./cmd/threadcap)"))
	}
	if o.rounds < 1 || o.scaleRounds < 1 || o.window <= 0 || o.scaleWindow <= 0 {
		errs = append(errs, errors.New("rounds and windows must be positive"))
	}
	for _, n := range o.scale {
		if n <= o.busy {
			errs = append(errs, fmt.Errorf("--scale %d: needs more threads than --busy %d", n, o.busy))
		}
	}
	for _, hz := range o.rates {
		if hz < 1 || hz > 100 {
			errs = append(errs, fmt.Errorf("--rates %d: use 1 to 100 Hz", hz))
		}
	}
	return o, errors.Join(errs...)
}

func intList(dst *[]int) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("%q is not a number", f)
			}
			*dst = append(*dst, n)
		}
		return nil
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		if err := serveWorkload(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "bench workload: %v\n", err)
			os.Exit(1)
		}
		return
	}
	opt, err := parseOptions(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if err := run(opt); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(opt options) error {
	if os.Geteuid() != 0 {
		return errors.New("the benchmark loads BPF programs and starts threadcap: run it as root")
	}
	log := logrus.WithField("component", "bench")
	start := time.Now()
	s := &suite{opt: opt, configs: configs(opt.rates), res: results{}, log: log}
	hot := []workloadSpec{
		{wlSyscalls, []string{"syscalls", "-threads", strconv.Itoa(opt.syscallThreads)}},
		{wlPingPong, []string{"pingpong", "-pairs", "1", "-cpu", "0"}},
		{wlMix, []string{"mix", "-workers", strconv.Itoa(opt.mixUsers), "-dir", opt.tmp}},
		{wlDirectRead, []string{"directread", "-workers", strconv.Itoa(opt.mixUsers), "-dir", opt.tmp}},
	}
	primer, err := startWorker("primer", "mix", "-workers", "2", "-dir", opt.tmp)
	if err != nil {
		return err
	}
	defer primer.Close()
	s.primer = primer
	if err := s.throughput(hot); err != nil {
		return err
	}
	if len(opt.scale) > 0 {
		restore, err := makeRoomForThreads(slicesMax(opt.scale), log)
		if err != nil {
			return err
		}
		defer restore()
	}
	for _, n := range opt.scale {
		if err := s.scale(n, opt.busy); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	writeHeader(&out, opt, time.Since(start))
	if n, of := s.res.disturbed(); n > 0 {
		log.WithField("windows", n).Warn("other BPF tracing programs were loaded during the run: its baselines include their cost")
		fmt.Fprintf(&out, "**Not a quiet machine:** %d of %d windows ran with other tracing BPF programs loaded (another "+
			"threadcap, or its tests); they slow every configuration, the baselines too. Run again on a quiet machine.\n\n", n, of)
	}
	r := &report{res: s.res, configs: s.configs, workloads: workloadInfos(opt)}
	r.write(&out)
	os.Stdout.Write(out.Bytes())
	if err := os.WriteFile(opt.out, out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	log.WithField("file", opt.out).Info("results written")
	return nil
}

// wlMix is the name of the database-like workload, wlDirectRead of the random O_DIRECT
// reads.
const (
	wlMix        = "mix"
	wlDirectRead = "random O_DIRECT reads"
)

func workloadInfos(opt options) []workloadInfo {
	w := []workloadInfo{
		{name: wlSyscalls, unit: "getppid/s"},
		{name: wlPingPong, unit: "round trips/s"},
		{name: wlMix, unit: "transactions/s"},
		{name: wlDirectRead, unit: "reads/s"},
	}
	for _, n := range opt.scale {
		w = append(w, workloadInfo{name: fmt.Sprintf("scale %d", n), unit: "units/s"})
	}
	return w
}

func slicesMax(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// writeHeader says what ran, where, and how to run it again.
func writeHeader(out *bytes.Buffer, opt options, took time.Duration) {
	fmt.Fprintf(out, "## threadcap benchmark, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(out, "- machine: %s, %d CPUs, Linux %s\n", cpuModel(), runtime.NumCPU(), kernel())
	fmt.Fprintf(out, "- threadcap: %s\n", daemonVersion(opt.daemon))
	fmt.Fprintf(out, "- command: `%s`\n", strings.Join(os.Args, " "))
	fmt.Fprintf(out, "- %d rounds × %v per hot-path workload, %d rounds × %v per scale workload, configurations interleaved; took %v\n\n",
		opt.rounds, opt.window, opt.scaleRounds, opt.scaleWindow, took.Round(time.Second))
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func daemonVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "unknown version"
	}
	return strings.TrimSpace(string(out))
}
