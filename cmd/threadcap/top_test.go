// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/state"
)

// The tests drive `threadcap top` in a real terminal: tmux runs this test binary as the
// command (TestTopHelperProcess), keys are sent with send-keys and the screen read with
// capture-pane. What the screen says is checked against `threadcap report --format json`
// run in the same test over the same files.

const (
	helperEnv = "THREADCAP_TOP_HELPER"
	offsetEnv = "THREADCAP_TOP_CLOCK_OFFSET" // added to the clock of top, as to the writer's
	prompt    = "tc-test$ "
)

// TestTopHelperProcess is `threadcap top` when run by a test under tmux; otherwise it
// does nothing.
func TestTopHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	offset, _ := time.ParseDuration(os.Getenv(offsetEnv))
	os.Exit(topCommandAt(args, func() time.Time { return time.Now().Add(offset) }))
}

// workload is one synthetic thread of a recording, in the same state at every tick.
type workload struct {
	pid, tid         int32
	process, thread  string
	st               state.State
	syscall          string
	onCPUUs          int64
	ioDev, ioOp      string
	kernelStack, usr []string
}

// knownWorkloads are the threads of a recording: a spinner, a hog that waits for its CPU,
// a writer's two threads in D state on a disk, a sleeper, and a process whose name is an
// escape sequence that would clear a terminal that printed it as it is.
var knownWorkloads = []workload{
	{pid: 101, tid: 101, process: "spinner", thread: "spinner", st: state.OnCPU, onCPUUs: 100000},
	{pid: 102, tid: 102, process: "hog", thread: "hog", st: state.Runnable, onCPUUs: 40000},
	{pid: 103, tid: 103, process: "dbwriter", thread: "dbwriter", st: state.Uninterruptible, syscall: "pwrite64",
		onCPUUs: 2000, ioDev: "sda", ioOp: "write",
		kernelStack: []string{"entry_SYSCALL_64", "do_syscall_64", "ksys_pwrite64", "vfs_write", "io_schedule"},
		usr:         []string{"main", "flush_loop", "pwrite64"}},
	{pid: 103, tid: 104, process: "dbwriter", thread: "dbwriter-bg", st: state.Uninterruptible, syscall: "fsync",
		onCPUUs: 1000, ioDev: "sda", ioOp: "flush",
		kernelStack: []string{"entry_SYSCALL_64", "do_syscall_64", "do_fsync", "io_schedule"}},
	{pid: 105, tid: 105, process: "sleeper", thread: "sleeper", st: state.Sleeping, syscall: "clock_nanosleep",
		kernelStack: []string{"entry_SYSCALL_64", "do_nanosleep", "schedule"}},
	{pid: 106, tid: 106, process: "\x1b[2J\x1b[31mevil", thread: "evil\x07", st: state.Runnable, onCPUUs: 500},
}

func (w workload) sample(tick time.Time, i int) state.Sample {
	s := state.Sample{Time: tick, Pid: w.pid, Tid: w.tid, Process: w.process, Thread: w.thread, User: "root",
		State: w.st, StateUs: int64(i) * 100000, Syscall: w.syscall, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown,
		CPU: 0, Exe: "/usr/bin/" + w.thread, IODev: w.ioDev, IOOp: w.ioOp}
	if w.syscall != "" {
		s.SyscallUs = int64(i%64+1) * 250 // from 250 µs to 16 ms, the syscall in progress so far
	}
	s.StateTimeUs[state.OnCPU] = w.onCPUUs
	s.StateTimeUs[w.st] += 100000 - w.onCPUUs
	if len(w.kernelStack) > 0 {
		s.KernelStack = state.NewStack(w.kernelStack)
	}
	if len(w.usr) > 0 {
		s.UserStack = state.NewStack(w.usr)
	}
	// The hog is on CPU every third tick; the writer's threads write for 20 s of every 60,
	// and wait for work in between.
	if w.process == "hog" && i%3 == 0 {
		s.State = state.OnCPU
	}
	if w.process == "dbwriter" && i%600 >= 200 {
		s.State, s.Syscall, s.IODev, s.IOOp, s.KernelStack, s.UserStack = state.Sleeping, "futex", "", "", nil, nil
		s.StateTimeUs = [state.TimedStates]int64{}
		s.StateTimeUs[state.Sleeping] = 100000
	}
	return s
}

// recorder writes hour files through output's writer, as the daemon does, with the
// writer's clock injected.
type recorder struct {
	w     *output.Writer
	clock func() time.Time
}

func newRecorder(t *testing.T, dir string, clock func() time.Time) *recorder {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	w, err := output.New(output.Config{Dir: dir, Compress: output.CompressNone, Clock: clock, Log: logger.WithField("component", "output")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &recorder{w: w, clock: clock}
}

// write writes the rows of workloads at tick, the i-th of the recording.
func (r *recorder) write(t *testing.T, tick time.Time, i int, workloads []workload) {
	rows := make([]state.Sample, len(workloads))
	for j, w := range workloads {
		rows[j] = w.sample(tick, i)
	}
	if err := r.w.Write(tick, rows); err != nil {
		t.Error(err)
	}
}

// recordPast writes ticks at 10 Hz from from to to (excluded), with known workloads.
func recordPast(t *testing.T, dir string, from, to time.Time) {
	t.Helper()
	r := newRecorder(t, dir, func() time.Time { return to })
	i := 0
	for tick := from; tick.Before(to); tick = tick.Add(100 * time.Millisecond) {
		r.write(t, tick, i, knownWorkloads)
		i++
	}
	if err := r.w.Close(); err != nil {
		t.Fatal(err)
	}
}

// liveRecorder writes a tick each 100 ms of clock time, in the background, until the test
// ends; workloads may be added while it runs.
type liveRecorder struct {
	mu        sync.Mutex
	workloads []workload
}

func recordLive(t *testing.T, dir string, clock func() time.Time) *liveRecorder {
	t.Helper()
	r := newRecorder(t, dir, clock)
	l := &liveRecorder{workloads: knownWorkloads}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			l.mu.Lock()
			ws := l.workloads
			l.mu.Unlock()
			r.write(t, clock().Truncate(100*time.Millisecond), i, ws)
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return l
}

func (l *liveRecorder) add(w workload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.workloads = append(l.workloads[:len(l.workloads):len(l.workloads)], w)
}

// terminal is a tmux server of its own with one pane, running a shell.
type terminal struct {
	t      *testing.T
	socket string
}

func newTerminal(t *testing.T, width, height int, env ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is missing: make install-tmux installs it")
		}
		t.Skip("tmux is missing: make install-tmux installs it")
	}
	term := &terminal{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	shell := []string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=tmux-256color", "PS1=" + prompt}
	shell = append(append(shell, env...), "bash", "--norc", "--noprofile")
	term.tmux(append([]string{"new-session", "-d", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height)}, shell...)...)
	t.Cleanup(func() { exec.Command("tmux", "-S", term.socket, "kill-server").Run() })
	term.waitFor("the shell's prompt", func(s string) bool { return strings.Contains(s, strings.TrimSpace(prompt)) })
	return term
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// run types a command line into the shell.
func (term *terminal) run(line string) {
	term.tmux("send-keys", "-l", line)
	term.tmux("send-keys", "Enter")
}

// keys sends keys by tmux's names: Enter, BSpace, Down, q.
func (term *terminal) keys(keys ...string) { term.tmux(append([]string{"send-keys"}, keys...)...) }

// screen is the pane's text, one string per row.
func (term *terminal) screen() string { return term.tmux("capture-pane", "-p") }

// styled is the pane's text with its colours and attributes as escape sequences.
func (term *terminal) styled() string { return term.tmux("capture-pane", "-p", "-e") }

// waitFor polls the screen until ok holds, for at most 10 s (a slow machine reading a
// recording under -race); it fails the test then, showing the screen.
func (term *terminal) waitFor(what string, ok func(string) bool) string {
	term.t.Helper()
	return term.waitWithin(what, 10*time.Second, ok)
}

func (term *terminal) waitWithin(what string, limit time.Duration, ok func(string) bool) string {
	term.t.Helper()
	var s string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s = term.screen(); ok(s) {
			return s
		}
	}
	term.t.Fatalf("no %s within %v; the screen:\n%s", what, limit, s)
	return ""
}

func (term *terminal) resize(width, height int) {
	term.tmux("resize-window", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height))
}

// topCommandLine is the shell command that runs `threadcap top args` in the pane.
func topCommandLine(t *testing.T, offset time.Duration, args ...string) string {
	exe := testBinary(t)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return fmt.Sprintf("%s=1 %s=%s %s -test.run='^TestTopHelperProcess$' -- %s",
		helperEnv, offsetEnv, offset, exe, strings.Join(quoted, " "))
}

// jsonReport is what `threadcap report --format json` says, in the fields compared.
type jsonReport struct {
	Ticks      int64   `json:"ticks"`
	Rows       int64   `json:"rows"`
	AvgThreads float64 `json:"avg_threads"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Files      []string
	By         []string `json:"by"`
	Groups     []struct {
		Values     map[string]string `json:"values"`
		Rows       int64             `json:"rows"`
		AvgThreads float64           `json:"avg_threads"`
		CPUSeconds float64           `json:"cpu_seconds"`
	} `json:"groups"`
}

// reportJSON runs `threadcap report --format json args`.
func reportJSON(t *testing.T, args ...string) jsonReport {
	t.Helper()
	cfg, err := parseReportFlags(append([]string{"--config", "", "--format", "json", "--top", "0"}, args...), time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runReport(cfg, &out); err != nil {
		t.Fatal(err)
	}
	var r jsonReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return r
}

// summary is the screen's totals line as the report's numbers make it.
func (r jsonReport) summary() string {
	files := "files"
	if len(r.Files) == 1 {
		files = "file"
	}
	return fmt.Sprintf("%d ticks, %d active rows: %.2f threads on average, %.2f CPU s, %d %s",
		r.Ticks, r.Rows, r.AvgThreads, r.CPUSeconds, len(r.Files), files)
}

// rowsOf are the table's lines the report's groups make, as the screen shows them
// (values, average threads, CPU seconds), most active first; the first n.
func (r jsonReport) rows(n int) [][]string {
	var rows [][]string
	for _, g := range r.Groups {
		if len(rows) == n {
			break
		}
		var row []string
		for _, c := range r.By {
			v := g.Values[c]
			if v == "" {
				v = "-"
			}
			row = append(row, v)
		}
		rows = append(rows, append(row, fmt.Sprintf("%.2f", g.AvgThreads), fmt.Sprintf("%.2f", g.CPUSeconds)))
	}
	return rows
}

// tableOf reads the table from a screen: per row after the header, its fields (values,
// threads, CPU seconds), up to the bar.
func tableOf(screen string, by []string) [][]string {
	lines := strings.Split(screen, "\n")
	var rows [][]string
	in := false
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), strings.ToUpper(by[0])) && strings.Contains(l, "THREADS") {
			in = true
			continue
		}
		if !in {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(l, "> "), "  "))
		if len(fields) < len(by)+2 || strings.HasPrefix(strings.TrimSpace(l), "…") {
			break
		}
		rows = append(rows, fields[:len(by)+2])
	}
	return rows
}

// checkFits fails when a line of the screen is wider than the terminal, or there are
// more lines than it has rows: a wrapped line shows as either.
func checkFits(t *testing.T, term *terminal, width, height int) {
	t.Helper()
	joined := term.tmux("capture-pane", "-p", "-J")
	lines := strings.Split(strings.TrimRight(joined, "\n"), "\n")
	if len(lines) > height {
		t.Errorf("%d lines in a %d-row terminal:\n%s", len(lines), height, joined)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells wide in a %d-column terminal: %q", i+1, w, width, l)
		}
	}
}

// quit presses q (or the key given, such as C-c) and expects the shell's prompt, the
// typed command line back on screen: the terminal is as it was.
func quit(t *testing.T, term *terminal, key ...string) {
	t.Helper()
	if len(key) == 0 {
		key = []string{"q"}
	}
	term.keys(key...)
	term.waitFor("the shell's prompt after q", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		// The command line typed is back above the prompt: the alternate screen is gone.
		return strings.Count(s, strings.TrimSpace(prompt)) >= 2 && !strings.Contains(s, "threadcap top  ") &&
			strings.TrimSpace(lines[len(lines)-1]) == strings.TrimSpace(prompt)
	})
}
