// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpSocket is the TCP socket a syscall of thread tid waits on: the descriptor fd_target
// named (target), or else the one descriptor a poll or an epoll wait waits on (a client
// waiting for its server's answer: libpq, curl). false for every other row, select's
// included: its sets are bitmaps as wide as the highest descriptor, read for little.
// What a poll or epoll wait waits on is looked up once per call (waits): a poll's
// descriptors are the kernel's copy, made at its start; an epoll's targets could change
// meanwhile, as fd_target's file could be replaced, and are taken as they were.
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
		epoll := fdKey{pid, int32(args[0])}
		if many, ok := waits.many[epoll]; ok && !Idle(now, many) && name != "poll" && name != "ppoll" {
			// An event loop's epoll of many targets, calling again and again: not
			// read at each call.
		} else {
			var targets int
			w.fd, targets = waitedFd(c.procRoot, name, args, pid)
			w.ok = targets == 1
			if targets > 1 && name != "poll" && name != "ppoll" {
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
var waitSyscalls = map[string]bool{"poll": true, "ppoll": true, "epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true}

// waitCache is what poll and epoll wait calls were found to wait on: each thread's last
// call, and the epolls (pid, descriptor) found to have several targets, not read again for
// IdleProcess: an epoll that comes down to one target meanwhile shows no TCP state, never
// a wrong one.
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

// waitedCall is what one poll or epoll wait call of a thread waits on.
type waitedCall struct {
	sinceNs uint64 // the call's start
	fd      int32
	ok      bool
	used    time.Time
}

// waitedFd is the one descriptor a poll (its single pollfd, read from the process's memory)
// or an epoll wait (its epoll's single target, from /proc/PID/fdinfo) waits on, and how
// many it waits on: 1 for that one, 0 when it cannot be told, 2 for several.
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
	case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		if int64(int32(args[0])) != int64(args[0]) || int32(args[0]) < 0 {
			return 0, 0
		}
		return epollSingleTarget(filepath.Join(procRoot, strconv.Itoa(int(pid)), "fdinfo", strconv.FormatUint(args[0], 10)))
	}
	return 0, 0
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
