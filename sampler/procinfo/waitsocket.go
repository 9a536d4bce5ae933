// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"bytes"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpSocket is the TCP socket a syscall of thread tid waits on: the descriptor fd_target
// named (target), or else the one descriptor a poll, a select or an epoll wait waits on (a
// client waiting for its server's answer: libpq, curl). false for every other row.
// What a wait waits on is looked up once per call (waits): a poll's pollfds and a select's
// sets, read from the process's memory, are what the kernel copied at the call's start, as
// it writes its results over them only on its way out (unless another thread of the
// process writes there meanwhile); an epoll's targets could change meanwhile, as
// fd_target's file could be replaced, and are taken as they were.
func (c *FdTargets) tcpSocket(waits *waitCache, name string, args [6]uint64, pid, tid int32, sinceNs uint64, target string, now time.Time) (TCPSocket, bool) {
	if IsTCP(target) {
		ino, ok := c.tcpInode(pid, args[0], target)
		return TCPSocket{Pid: pid, Tid: tid, Fd: int32(args[0]), Ino: ino, Target: target}, ok
	}
	if !waitSyscalls[name] {
		return TCPSocket{}, false
	}
	w := waits.calls[tid]
	if w == nil || w.sinceNs != sinceNs || sinceNs == 0 {
		w = &waitedCall{sinceNs: sinceNs}
		epollWait := strings.HasPrefix(name, "epoll_")
		epoll := fdKey{pid, int32(args[0])}
		if many, ok := waits.many[epoll]; ok && !Idle(now, many) && epollWait {
			// An event loop's epoll of many targets, calling again and again: not
			// read at each call.
		} else {
			var targets int
			w.fd, targets = waitedFd(c.procRoot, name, args, pid)
			w.ok = targets == 1
			if targets > 1 && epollWait {
				waits.many[epoll] = now
			}
		}
		waits.calls[tid] = w
	}
	w.used = now
	if !w.ok {
		return TCPSocket{}, false
	}
	// Named as a read of it would be, and cached with the same rules.
	t := c.Target("read", uint64(w.fd), pid, tid, sinceNs, now)
	if !IsTCP(t) {
		return TCPSocket{}, false
	}
	ino, ok := c.tcpInode(pid, uint64(w.fd), t)
	return TCPSocket{Pid: pid, Tid: tid, Fd: w.fd, Ino: ino, Target: t}, ok
}

// waitSyscalls are the syscalls waitedFd looks into.
var waitSyscalls = map[string]bool{
	"poll": true, "ppoll": true,
	"select": true, "pselect6": true, // arm64 has only pselect6
	"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
}

// waitCache is what poll, select and epoll wait calls were found to wait on: each thread's
// last call, and the epolls (pid, descriptor) found to have several targets, not read again
// for IdleProcess: an epoll that comes down to one target meanwhile shows no TCP state,
// never a wrong one.
type waitCache struct {
	calls map[int32]*waitedCall
	many  map[fdKey]time.Time
}

func newWaitCache() *waitCache {
	return &waitCache{calls: map[int32]*waitedCall{}, many: map[fdKey]time.Time{}}
}

// expire forgets the calls of threads not seen for IdleProcess, and the verdicts that are
// that old.
func (w *waitCache) expire(now time.Time) {
	maps.DeleteFunc(w.calls, func(_ int32, c *waitedCall) bool { return Idle(now, c.used) })
	maps.DeleteFunc(w.many, func(_ fdKey, found time.Time) bool { return Idle(now, found) })
}

// waitedCall is what one poll, select or epoll wait call of a thread waits on.
type waitedCall struct {
	sinceNs uint64 // the call's start
	fd      int32
	ok      bool
	used    time.Time
}

// waitedFd is the one descriptor a poll (its single pollfd, read from the process's memory),
// a select (see selectedFd) or an epoll wait (its epoll's single target, from
// /proc/PID/fdinfo) waits on, and how many it waits on: 1 for that one, 0 when it cannot be
// told, 2 for several.
func waitedFd(procRoot, name string, args [6]uint64, pid int32) (int32, int) {
	switch name {
	case "poll", "ppoll":
		if args[1] != 1 {
			return 0, min(int(min(args[1], 2)), 2)
		}
		var fd int32 // struct pollfd starts with the int fd
		local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&fd))}}
		local[0].SetLen(4)
		remote := []unix.RemoteIovec{{Base: uintptr(args[0]), Len: 4}}
		if n, err := unix.ProcessVMReadv(int(pid), local, remote, 0); err != nil || n != 4 || fd < 0 {
			return 0, 0
		}
		return fd, 1
	case "select", "pselect6":
		return selectedFd(args, pid)
	case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		if int64(int32(args[0])) != int64(args[0]) || int32(args[0]) < 0 {
			return 0, 0
		}
		return epollSingleTarget(filepath.Join(procRoot, strconv.Itoa(int(pid)), "fdinfo", strconv.FormatUint(args[0], 10)))
	}
	return 0, 0
}

// selectMaxFds bounds the nfds of a select whose sets are read: FD_SETSIZE, the width of
// glibc's and musl's fd_set, 128 bytes a set. A select given more, on sets a program made
// wider itself, cannot be told.
const selectMaxFds = 1024

// selectedFd is the one descriptor a select or pselect6 (nfds, readfds, writefds,
// exceptfds, ...) waits on across its three sets, and how many it waits on (as waitedFd
// counts them): a descriptor in two sets counts once. The sets are read from the process's
// memory in one call, as many whole longs of each as the kernel copies. While the call
// waits they still hold what it was given: core_sys_select (fs/select.c) copies them in at
// its start (get_fd_set) and writes its results over them only once do_select has returned
// (set_fd_set). Bits from nfds on are not waited on (do_select stops there), nor counted.
func selectedFd(args [6]uint64, pid int32) (int32, int) {
	nfds := int32(args[0]) // an int to the kernel, which ignores the register's upper half
	if nfds <= 0 || nfds > selectMaxFds {
		return 0, 0
	}
	words := (int(nfds) + 63) / 64
	var sets [3][selectMaxFds / 64]uint64
	var local []unix.Iovec
	var remote []unix.RemoteIovec
	for i, addr := range args[1:4] {
		if addr == 0 { // NULL: waits on nothing of that kind
			continue
		}
		l := unix.Iovec{Base: (*byte)(unsafe.Pointer(&sets[i][0]))}
		l.SetLen(words * 8)
		local = append(local, l)
		remote = append(remote, unix.RemoteIovec{Base: uintptr(addr), Len: words * 8})
	}
	if len(remote) == 0 {
		return 0, 0
	}
	if n, err := unix.ProcessVMReadv(int(pid), local, remote, 0); err != nil || n != len(remote)*words*8 {
		return 0, 0
	}
	var fd int32
	count := 0
	for w := range words {
		set := sets[0][w] | sets[1][w] | sets[2][w]
		if last := int(nfds) - w*64; last < 64 {
			set &= 1<<last - 1
		}
		if set == 0 {
			continue
		}
		if count += bits.OnesCount64(set); count > 1 {
			return 0, 2
		}
		fd = int32(w*64 + bits.TrailingZeros64(set))
	}
	return fd, count
}

// epollFdinfoHead bounds what is read of an epoll's fdinfo: its header and a few "tfd:"
// lines, one per target, are enough to tell one target from several, however many a
// server's epoll holds.
const epollFdinfoHead = 1024

// epollSingleTarget reads an epoll's fdinfo ("tfd:        5 events:       19 data: ...",
// a line per target) and gives its target when it has exactly one, and how many it has
// (0 when unreadable, 2 for several).
func epollSingleTarget(path string) (int32, int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var head [epollFdinfoHead]byte
	n, _ := f.Read(head[:])
	buf := head[:n]
	// A full head is an epoll of many targets (one takes some 150 bytes).
	if count := bytes.Count(buf, []byte("\ntfd:")); n == epollFdinfoHead || count != 1 {
		if n == epollFdinfoHead {
			count = 2
		}
		return 0, min(count, 2)
	}
	i := bytes.Index(buf, []byte("\ntfd:")) + len("\ntfd:")
	fields := bytes.Fields(buf[i:])
	if len(fields) == 0 {
		return 0, 0
	}
	fd, err := strconv.ParseInt(string(fields[0]), 10, 32)
	if err != nil || fd < 0 {
		return 0, 0
	}
	return int32(fd), 1
}
