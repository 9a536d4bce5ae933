// SPDX-License-Identifier: Apache-2.0

package state

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Seed lists every thread under the proc filesystem at root (normally /proc) as a seeded
// Thread: its state, CPU, syscall and arguments, and wait channel, as /proc shows them.
// It is how threads that existed before the kernel side was attached, and have not hit a
// probe since (a thread asleep for hours), are seen from the first tick. Threads and
// processes that exit while being read are skipped.
func Seed(root string) ([]Thread, error) {
	pfs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil, err
	}
	r := &procReader{buf: make([]byte, 4096)}
	var threads []Thread
	for _, p := range procs {
		tasks, err := pfs.AllThreads(p.PID)
		if err != nil {
			continue // exited
		}
		for _, task := range tasks {
			th, err := r.seedThread(root, p.PID, task.PID)
			if err != nil {
				continue // exited, or unreadable: the kernel side will see it when it runs
			}
			threads = append(threads, th)
		}
	}
	return threads, nil
}

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags.
const pfKthread = 0x00200000

// procReader reads a thread's small /proc files into one buffer with plain syscalls. The
// first tick waits for every thread to be read: through os.File and procfs's stat parser
// (fmt.Fscan) a thread took ~60 µs, 0.6 s for 10,000 threads; this way, a third of that.
type procReader struct {
	buf []byte
}

// read returns the start of the file at path; buf is big enough for the files read here.
func (r *procReader) read(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, r.buf)
	if err != nil {
		return nil, err
	}
	return r.buf[:n], nil
}

func (r *procReader) seedThread(root string, pid, tid int) (Thread, error) {
	dir := root + "/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/"
	b, err := r.read(dir + "stat")
	if err != nil {
		return Thread{}, err
	}
	st, err := parseStat(b)
	if err != nil {
		return Thread{}, fmt.Errorf("%sstat: %w", dir, err)
	}
	s, err := FromProc(st.state)
	if err != nil {
		return Thread{}, err
	}
	th := Thread{
		Tid:         int32(tid),
		Pid:         int32(pid),
		State:       s,
		CPU:         st.cpu,
		Syscall:     NoSyscall,
		LastSyscall: NoSyscall,
		Seeded:      true,
	}
	copy(th.Comm[:len(th.Comm)-1], st.comm)
	// A running thread's wait channel and syscall are stale by the time they are read; a
	// kernel thread has no syscall (/proc shows it as syscall 0, read).
	if s != OnCPU {
		if b, err := r.read(dir + "wchan"); err == nil && string(b) != "0" {
			th.Wchan = string(b)
		}
		if st.flags&pfKthread == 0 {
			if b, err := r.read(dir + "syscall"); err == nil {
				th.Syscall, th.Args = parseSyscall(b)
			}
		}
	}
	return th, nil
}

// procStat is what seeding needs of /proc/PID/task/TID/stat.
type procStat struct {
	comm  []byte
	state string
	flags uint64
	cpu   int32
}

// parseStat parses "pid (comm) state ppid ... flags ... processor ...". The name may hold
// spaces and parentheses, so it ends at the last ')'.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("no command name")
	}
	// After the name, field 3 (state) is at index 0, field 9 (flags) at 6 and field 39
	// (processor) at 36.
	f := bytes.Fields(b[end+1:])
	if len(f) < 37 {
		return procStat{}, fmt.Errorf("%d fields after the command name, want at least 37", len(f))
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("flags: %w", err)
	}
	cpu, err := strconv.ParseInt(string(f[36]), 10, 32)
	if err != nil {
		return procStat{}, fmt.Errorf("processor: %w", err)
	}
	return procStat{comm: b[open+1 : end], state: string(f[0]), flags: flags, cpu: int32(cpu)}, nil
}

// parseSyscall parses /proc/PID/task/TID/syscall: "nr arg0 ... arg5 sp pc" in a syscall,
// "-1 sp pc" blocked outside one, "running" on CPU. procfs has no parser for it.
func parseSyscall(b []byte) (int32, [6]uint64) {
	var args [6]uint64
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return NoSyscall, args
	}
	nr, err := strconv.ParseInt(f[0], 10, 32)
	if err != nil || nr < 0 {
		return NoSyscall, args
	}
	for i := range args {
		args[i], _ = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
	}
	return int32(nr), args
}
