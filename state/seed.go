// SPDX-License-Identifier: Apache-2.0

package state

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
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
	var threads []Thread
	for _, p := range procs {
		tasks, err := pfs.AllThreads(p.PID)
		if err != nil {
			continue // exited
		}
		for _, task := range tasks {
			th, err := seedThread(root, p.PID, task)
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

func seedThread(root string, pid int, task procfs.Proc) (Thread, error) {
	st, err := task.Stat()
	if err != nil {
		return Thread{}, err
	}
	s, err := FromProc(st.State)
	if err != nil {
		return Thread{}, err
	}
	th := Thread{
		Tid:         int32(task.PID),
		Pid:         int32(pid),
		State:       s,
		CPU:         int32(st.Processor),
		Syscall:     NoSyscall,
		LastSyscall: NoSyscall,
		Seeded:      true,
	}
	copy(th.Comm[:len(th.Comm)-1], st.Comm)
	// A running thread's wait channel and syscall are stale by the time they are read; a
	// kernel thread has no syscall (/proc shows it as syscall 0, read).
	if s != OnCPU {
		th.Wchan, _ = task.Wchan()
		if st.Flags&pfKthread == 0 {
			th.Syscall, th.Args = readSyscall(root, pid, task.PID)
		}
	}
	return th, nil
}

// readSyscall parses /proc/PID/task/TID/syscall: "nr arg0 ... arg5 sp pc" in a syscall,
// "-1 sp pc" blocked outside one, "running" on CPU. procfs has no parser for it.
func readSyscall(root string, pid, tid int) (int32, [6]uint64) {
	var args [6]uint64
	b, err := os.ReadFile(root + "/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return NoSyscall, args
	}
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
