// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Every row's times are meant to be exact at its tick's instant, a wall-clock multiple of
// the interval. To hold them against the kernel's own accounting, the test reads the
// schedstat of every thread on the machine right at such instants: it lists the threads a
// moment before, sleeps until the instant, then reads them all as fast as it can.

// threadCPU is one thread's on-CPU time at an instant.
type threadCPU struct {
	pid   int
	start uint64 // /proc/PID/task/TID/stat starttime, which tells a reused tid apart
	onCPU time.Duration
	// late is how long after the instant its schedstat was read. A thread cannot run for
	// longer than that meanwhile, so its time at the instant is within late of onCPU.
	late time.Duration
}

// cpuSnapshot is every thread's on-CPU time at one instant, by tid.
type cpuSnapshot struct {
	at      time.Time
	threads map[int]threadCPU
	latest  time.Duration // the largest late
	reader  int           // the tid of the thread that read it
	// next is schedstat an interval later (the hook-free mode's checks), nil when not read.
	next *cpuSnapshot
}

// same is thread tid in s, if s was read and tid is still the thread of was.
func (s *cpuSnapshot) same(tid int, was threadCPU) (threadCPU, bool) {
	if s == nil {
		return threadCPU{}, false
	}
	th, ok := s.threads[tid]
	return th, ok && th.pid == was.pid && th.start == was.start
}

// task names one thread in /proc.
type task struct{ pid, tid int }

// listTasks lists every thread on the machine.
func listTasks() []task {
	dirs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	tasks := make([]task, 0, len(dirs))
	for _, d := range dirs {
		tid, err1 := strconv.Atoi(filepath.Base(d))
		pid, err2 := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(d))))
		if err1 == nil && err2 == nil {
			tasks = append(tasks, task{pid, tid})
		}
	}
	return tasks
}

// snapshotsAt takes a cpuSnapshot at each instant of at, in order, skipping any already
// past when its turn comes. It runs on a thread of its own at the highest priority, so
// that the machine's load delays the reads as little as it can.
func snapshotsAt(at []time.Time) []cpuSnapshot {
	done := make(chan []cpuSnapshot)
	go func() {
		// Never unlocked: the thread, and its priority, end with the goroutine.
		runtime.LockOSThread()
		unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20)
		var snaps []cpuSnapshot
		for _, instant := range at {
			// Listing takes a few milliseconds; a thread born after it is not compared.
			time.Sleep(time.Until(instant) - 50*time.Millisecond)
			if time.Now().After(instant) {
				continue
			}
			tasks := listTasks()
			snap := readAt(instant, tasks)
			snap.reader = unix.Gettid()
			snaps = append(snaps, snap)
		}
		done <- snaps
	}()
	return <-done
}

// readAt waits for instant, then reads the schedstat of every task, and their start times
// once the timely part is over.
func readAt(instant time.Time, tasks []task) cpuSnapshot {
	for d := time.Until(instant); d > 0; d = time.Until(instant) {
		time.Sleep(d)
	}
	s := cpuSnapshot{at: instant, threads: make(map[int]threadCPU, len(tasks))}
	buf := make([]byte, 256)
	for _, tk := range tasks {
		ns, ok := readNumber(taskPath(tk, "schedstat"), buf)
		late := time.Since(instant)
		if ok {
			s.threads[tk.tid] = threadCPU{pid: tk.pid, onCPU: time.Duration(ns), late: late}
			s.latest = max(s.latest, late)
		}
	}
	for _, tk := range tasks {
		th, ok := s.threads[tk.tid]
		if !ok {
			continue
		}
		if th.start, ok = startTime(taskPath(tk, "stat")); ok {
			s.threads[tk.tid] = th
		} else {
			delete(s.threads, tk.tid) // gone since: it was not alive throughout anyway
		}
	}
	return s
}

func taskPath(tk task, file string) string {
	return "/proc/" + strconv.Itoa(tk.pid) + "/task/" + strconv.Itoa(tk.tid) + "/" + file
}

// readNumber reads the first number of a small file, without allocating: it is called for
// every thread on the machine in a hurry.
func readNumber(path string, buf []byte) (uint64, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, false
	}
	field, _, _ := bytes.Cut(buf[:n], []byte{' '})
	v, err := strconv.ParseUint(string(field), 10, 64)
	return v, err == nil
}

// startTime is field 22 of a stat file, counted after the command name, which may hold
// spaces and parentheses.
func startTime(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // from field 3, the state
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[19]), 10, 64)
	return v, err == nil
}
