// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
)

// daemon is a running `threadcap run`, the real binary as users run it.
type daemon struct {
	run      *daemontest.Daemon
	dir      string
	interval time.Duration
	startup  time.Duration
	settings string // its config file, if any
}

// startupTimeout bounds the wait for the first row; seeding 50,000 threads from /proc
// on a slow machine takes seconds, not minutes.
const startupTimeout = time.Minute

// startDaemon runs the daemon of c with its files in a new directory under tmp and
// returns once its first row has reached the CSV file.
func startDaemon(bin string, c config, tmp string) (*daemon, error) {
	dir, err := os.MkdirTemp(tmp, "threadcap-bench-data-*")
	if err != nil {
		return nil, fmt.Errorf("making the daemon's data dir: %w", err)
	}
	d := &daemon{dir: dir, interval: time.Second / time.Duration(c.hz)}
	args := []string{"--dir", dir, "--hz", strconv.Itoa(c.hz), "--syscalls", c.mode}
	if c.settings != "" {
		// Beside the CSV files, not among them: the daemon owns its directory.
		settings := dir + ".yaml"
		if err := os.WriteFile(settings, []byte(c.settings), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("writing the daemon's config: %w", err)
		}
		d.settings = settings
		args = append(args, "--config", settings)
	}
	start := time.Now()
	if d.run, err = daemontest.Launch(bin, args...); err != nil {
		d.removeFiles()
		return nil, fmt.Errorf("starting %s (build it with: go build ./cmd/threadcap): %w", bin, err)
	}
	for !d.hasRow() {
		if d.run.Exited() {
			d.removeFiles()
			return nil, fmt.Errorf("threadcap exited before its first sample (%v):\n%s", d.run.Err(), d.run.Log)
		}
		time.Sleep(2 * time.Millisecond)
		if time.Since(start) > startupTimeout {
			d.Close()
			return nil, fmt.Errorf("threadcap wrote no row in %v:\n%s", startupTimeout, d.run.Log)
		}
	}
	d.startup = time.Since(start)
	return d, nil
}

// hasRow reports whether an hour file holds a line past its header.
func (d *daemon) hasRow() bool {
	names, _ := filepath.Glob(filepath.Join(d.dir, "threadcap_samples_*.csv"))
	for _, name := range names {
		if b, err := os.ReadFile(name); err == nil && bytes.Count(b, []byte{'\n'}) > 1 {
			return true
		}
	}
	return false
}

// csvSize is the size of the uncompressed hour files of every kind (samples, stacks,
// ticks), together.
func (d *daemon) csvSize() (int64, map[string]int64) {
	sizes := map[string]int64{}
	var total int64
	names, _ := filepath.Glob(filepath.Join(d.dir, "threadcap_*.csv"))
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			sizes[filepath.Base(name)] = fi.Size()
			total += fi.Size()
		}
	}
	return total, sizes
}

// settle waits past the next tick, and then long enough for that tick to be written,
// even when a wake of 50,000 threads gave it a row for each.
func (d *daemon) settle() {
	next := time.Now().Truncate(d.interval).Add(d.interval)
	time.Sleep(time.Until(next) + max(quiet, d.interval/2))
}

func (d *daemon) mark() (costMark, error) {
	m := costMark{at: time.Now()}
	var err error
	if m.cpuNs, err = cpuNs(d.run.Cmd.Process.Pid); err != nil {
		return m, err
	}
	_, m.csvBytes = d.csvSize()
	m.hwmKB, err = hwmKB(d.run.Cmd.Process.Pid)
	return m, err
}

// removeFiles removes the daemon's directory and config file.
func (d *daemon) removeFiles() {
	os.RemoveAll(d.dir)
	if d.settings != "" {
		os.Remove(d.settings)
	}
}

// Close stops the daemon as an administrator would (SIGTERM) and removes its files. An
// exit other than a clean one is an error: the benchmark must not hide a crash.
func (d *daemon) Close() error {
	defer d.removeFiles()
	if _, err := d.run.Shutdown(syscall.SIGTERM, 30*time.Second); err != nil {
		return fmt.Errorf("%w:\n%s", err, d.run.Log)
	}
	if err := d.run.Err(); err != nil {
		return fmt.Errorf("threadcap exited with %v:\n%s", err, d.run.Log)
	}
	return nil
}

// cpuNs is the CPU time all of pid's threads have used, in nanoseconds, from each
// thread's schedstat: exact, where /proc/PID/stat counts in 10 ms clock ticks.
func cpuNs(pid int) (uint64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("reading the threads of process %d: not running", pid)
	}
	var total uint64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited: Go rarely ends threads, and then with little CPU
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", t, err)
		}
		total += ns
	}
	return total, nil
}

// hwmKB is pid's peak resident set size (VmHWM), in KiB.
func hwmKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return statusField(string(b), "VmHWM")
}

// statusField reads a "Name:   123 kB" line of /proc/PID/status.
func statusField(status, name string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/PID/status", name)
}
