// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/threadcap/threadcap/test/bench/load"
)

// A workload runs in a process of its own (this binary, re-run as "workload KIND"), so
// that its threads, its Go runtime and its memory are apart from the harness's. The
// harness drives it over stdin and stdout, one line per request and per reply:
//
//	harness: run 1.5s   →  worker: {"result":{"ops_per_sec":...}}
//	harness: wake       →  worker: {}
//
// and closes stdin to end it. The worker prints "ready" once prepared.

// reply is a worker's answer to one request.
type reply struct {
	Result load.Result `json:"result"`
	Error  string      `json:"error,omitempty"`
}

// waker is a workload whose idle threads can be made to run once.
type waker interface{ Wake() error }

// serveWorkload is the worker's side: prepare the workload, then answer requests.
func serveWorkload(args []string) error {
	w, err := newWorkload(args)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		verb, arg, _ := strings.Cut(in.Text(), " ")
		var r reply
		var err error
		switch verb {
		case "run":
			var d time.Duration
			if d, err = time.ParseDuration(arg); err == nil {
				r.Result, err = w.Run(d)
			}
		case "wake":
			if wk, ok := w.(waker); ok {
				err = wk.Wake()
			}
		default:
			err = fmt.Errorf("unknown request %q", verb)
		}
		if err != nil {
			r.Error = err.Error()
		}
		if err := out.Encode(r); err != nil {
			return err
		}
	}
	return w.Close()
}

// newWorkload builds the workload "KIND [flags]" names.
func newWorkload(args []string) (load.Workload, error) {
	if len(args) == 0 {
		return nil, errors.New("workload: name one of syscalls, pingpong, mix, directread, scale")
	}
	fs := flag.NewFlagSet("workload "+args[0], flag.ContinueOnError)
	threads := fs.Int("threads", 2, "syscalls: threads calling getppid")
	pairs := fs.Int("pairs", 1, "pingpong: thread pairs")
	cpu := fs.Int("cpu", 0, "pingpong: the CPU every thread is pinned to")
	workers := fs.Int("workers", 4, "mix, directread: worker threads")
	dir := fs.String("dir", os.TempDir(), "mix, directread: where the data file goes")
	idle := fs.Int("idle", 9900, "scale: idle threads")
	busy := fs.Int("busy", 100, "scale: busy threads")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	switch args[0] {
	case "syscalls":
		return &load.Syscalls{Threads: *threads}, nil
	case "pingpong":
		return &load.PingPong{Pairs: *pairs, CPU: *cpu}, nil
	case "mix":
		return load.NewMix(*dir, *workers)
	case "directread":
		return load.NewDirectRead(*dir, *workers)
	case "scale":
		return load.NewScale(*idle, *busy), nil
	}
	return nil, fmt.Errorf("unknown workload %q: use syscalls, pingpong, mix, directread or scale", args[0])
}

// worker is the harness's handle on a workload process.
type worker struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// startWorker starts "workload args..." and waits until it is prepared.
func startWorker(name string, args ...string) (*worker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{"workload"}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting workload %s: %w", name, err)
	}
	w := &worker{name: name, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	// Starting 50,000 threads takes a while on a small machine.
	if line, err := w.next(2 * time.Minute); err != nil || line != "ready" {
		w.Close()
		return nil, fmt.Errorf("workload %s did not get ready (%q): %w", name, line, err)
	}
	return w, nil
}

func (w *worker) next(timeout time.Duration) (string, error) {
	select {
	case line, ok := <-w.lines:
		if !ok {
			return "", fmt.Errorf("workload %s exited", w.name)
		}
		return line, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("workload %s did not answer within %v", w.name, timeout)
	}
}

// request sends one request and returns the worker's result.
func (w *worker) request(req string, timeout time.Duration) (load.Result, error) {
	if _, err := fmt.Fprintln(w.in, req); err != nil {
		return load.Result{}, fmt.Errorf("workload %s: %w", w.name, err)
	}
	line, err := w.next(timeout)
	if err != nil {
		return load.Result{}, err
	}
	var r reply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return load.Result{}, fmt.Errorf("workload %s answered %q: %w", w.name, line, err)
	}
	if r.Error != "" {
		return r.Result, fmt.Errorf("workload %s: %s", w.name, r.Error)
	}
	return r.Result, nil
}

// run measures one window of d.
func (w *worker) run(d time.Duration) (load.Result, error) {
	return w.request("run "+d.String(), d+time.Minute)
}

// wake makes every idle thread of the workload run once.
func (w *worker) wake() error {
	_, err := w.request("wake", 2*time.Minute)
	return err
}

// Close ends the worker: its stdin closes, it ends its threads and exits.
func (w *worker) Close() error {
	w.in.Close()
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		w.cmd.Process.Kill()
		return fmt.Errorf("workload %s did not exit; killed it: %w", w.name, <-done)
	}
}
