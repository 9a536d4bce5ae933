// SPDX-License-Identifier: Apache-2.0

// Package timetravel records a known workload with the real daemon, so that tests can check
// what the tools reading the files afterwards (threadcap report, DuckDB) say about it.
package timetravel

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// Interval is the daemon's tick interval in a recording: --hz 10.
const Interval = 100 * time.Millisecond

// Recording is a daemon run over known workloads. Every workload is its own process, named
// so that a query by process name finds it alone.
type Recording struct {
	Bin string // the threadcap binary
	Dir string // the hour files
	// From and To are tick times: the window [From, To) holds the ticks of a few seconds
	// in the middle of the run, when every workload was at its steady state.
	From, To time.Time
	// Spinner and Hog spin on the same CPU, so each waits for it about half the time.
	Spinner, Hog int
	// Sleeper sits in one clock_nanosleep for the whole run.
	Sleeper int
	// VforkParent waits in vfork, in D state, for the whole run (a minute at most).
	VforkParent int
	// SpinnerCPU is the spinner's on-CPU time by schedstat over the time the window's rows
	// account for: from the tick before From to the last tick before To, each at the
	// moment the daemon read the threads for it.
	SpinnerCPU time.Duration
	// SpanCalls is how many calls spanwork made, each a span call with a span work inside
	// (workload.SpanWorkSpans): 5 ms on CPU, then 10 ms asleep.
	SpanCalls int
}

// Names of the workload processes.
const (
	SpinnerName = "ttspinner"
	HogName     = "tthog"
	SleeperName = "sleep"
	VforkName   = "vfork_parent"
)

// Record builds threadcap, runs it at 10 Hz with --all over the workloads for about ten
// seconds, and stops it. It needs root.
func Record(t *testing.T) *Recording {
	t.Helper()
	privileged.Require(t)
	tmp := t.TempDir()
	r := &Recording{Bin: Build(t), Dir: filepath.Join(tmp, "data")}

	// Every workload waits on a pipe before it starts, so that the daemon, attached by then,
	// sees it begin (a thread it has not seen is only seeded from /proc, with no syscall
	// times); the daemon's --pid needs their pids before that.
	gate := gate(t)
	r.Spinner = start(t, gate, copyOf(t, "/bin/sh", filepath.Join(tmp, SpinnerName)), "-c", "read x; while :; do :; done")
	r.Hog = start(t, gate, copyOf(t, "/bin/sh", filepath.Join(tmp, HogName)), "-c", "read x; while :; do :; done")
	r.Sleeper = start(t, gate, "/bin/sh", "-c", "read x; exec sleep 600")
	// The vfork parent starts at once: it shows seeded, in D state in vfork, until it ends.
	// Its child outlives the test (killing the parent leaves it asleep), so not by much.
	r.VforkParent = workload.VforkParent(t, time.Minute).Pid
	for _, pid := range []int{r.Spinner, r.Hog} {
		var cpu0 unix.CPUSet
		cpu0.Set(0)
		if err := unix.SchedSetaffinity(pid, &cpu0); err != nil {
			t.Fatalf("pinning %d to CPU 0: %v", pid, err)
		}
	}

	// Spans of a program with its own USDT probes, run in the middle of the recording.
	spanwork := workload.SpanWork(t)
	config := filepath.Join(tmp, "threadcap.yaml")
	if err := os.WriteFile(config, []byte(workload.SpanWorkSpans(spanwork)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.SpanCalls = 40
	daemon := daemontest.StartFromShell(t, r.Bin, "--config", config, "--hz", "10", "--all", "--dir", r.Dir, "--log-level", "warn",
		"--pid", fmt.Sprintf("%d,%d,%d,%d", r.Spinner, r.Hog, r.Sleeper, r.VforkParent))
	waitForRows(t, r.Dir)
	gate.Close() // every workload reads EOF and starts

	stopWatch := watch(r.Spinner, r.Dir)
	started := time.Now()
	time.Sleep(3 * time.Second)
	if out, err := exec.Command(spanwork, strconv.Itoa(r.SpanCalls), "5", "10").CombinedOutput(); err != nil {
		t.Fatalf("spanwork: %v\n%s", err, out)
	}
	time.Sleep(9*time.Second - time.Since(started))
	daemon.StopWith(t, syscall.SIGINT)
	obs := stopWatch()

	// Two seconds in, six seconds long: away from the workloads' start and the daemon's end,
	// on whole seconds, as people ask.
	r.From = started.Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	r.To = r.From.Add(6 * time.Second)
	ticks := tickTimes(t, r.Dir)
	before := func(at time.Time) time.Time {
		i, _ := slices.BinarySearchFunc(ticks, at, time.Time.Compare)
		if i == 0 {
			t.Fatalf("no tick before %v in the files", at)
		}
		return ticks[i-1]
	}
	first, last := before(r.From), before(r.To)
	r.SpinnerCPU = obs.cpuAt(t, last) - obs.cpuAt(t, first)
	t.Logf("ticks %v and %v were written %v and %v after their labels", first.Format(time.StampMilli),
		last.Format(time.StampMilli), obs.written[first.UnixNano()].Sub(first), obs.written[last.UnixNano()].Sub(last))
	return r
}

// Build compiles threadcap from this repository into a temporary directory.
func Build(t *testing.T) string {
	t.Helper()
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// pipeGate holds workloads back until Close.
type pipeGate struct{ r, w *os.File }

func gate(t *testing.T) *pipeGate {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &pipeGate{r, w}
	t.Cleanup(func() { r.Close(); w.Close() })
	return g
}

func (g *pipeGate) Close() { g.w.Close() }

// start runs a workload with the gate as its stdin and returns its pid.
func start(t *testing.T, g *pipeGate, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = g.r
	return workload.Process(t, cmd)
}

// copyOf copies an executable to path, so that the process it runs has path's base name.
func copyOf(t *testing.T, src, path string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitForRows waits for the daemon's first rows: it is attached by then. The limit only
// stops a broken build from hanging.
func waitForRows(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(tickTimesOrNone(dir)) > 0 {
			return
		}
	}
	t.Fatal("threadcap wrote no row within a minute")
}

// tickTimes are the distinct tick times in the hour files of dir, in order.
func tickTimes(t *testing.T, dir string) []time.Time {
	t.Helper()
	ticks := tickTimesOrNone(dir)
	if len(ticks) == 0 {
		t.Fatalf("no rows in %s", dir)
	}
	return ticks
}

// tickTimesOrNone reads the current hour's file and, when the run crossed an hour, the
// previous one, which the daemon has compressed (with gzip, its default) or is compressing.
func tickTimesOrNone(dir string) []time.Time {
	paths, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv*"))
	var ticks []time.Time
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		var in io.Reader = f
		if strings.HasSuffix(p, ".csv.gz") {
			if in, err = gzip.NewReader(f); err != nil {
				f.Close()
				continue
			}
		} else if !strings.HasSuffix(p, ".csv") {
			f.Close()
			continue
		}
		cr := csv.NewReader(in)
		cr.FieldsPerRecord = -1
		for {
			rec, err := cr.Read()
			if err == io.EOF || err != nil && !isFieldCount(err) {
				break
			}
			if tm, err := time.Parse(time.RFC3339Nano, rec[0]); err == nil {
				ticks = append(ticks, tm)
			}
		}
		f.Close()
	}
	slices.SortFunc(ticks, time.Time.Compare)
	return slices.CompactFunc(ticks, time.Time.Equal)
}

func isFieldCount(err error) bool {
	pe, ok := err.(*csv.ParseError)
	return ok && pe.Err == csv.ErrFieldCount
}
