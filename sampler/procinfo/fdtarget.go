// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fdSyscalls are the syscalls whose first argument is a file descriptor worth naming: what
// a thread blocked in one waits on is that file, pipe or socket.
var fdSyscalls = map[string]bool{
	"read": true, "write": true, "pread64": true, "pwrite64": true, "readv": true,
	"writev": true, "preadv": true, "pwritev": true, "preadv2": true, "pwritev2": true,
	"recvfrom": true, "recvmsg": true, "recvmmsg": true, "sendto": true, "sendmsg": true,
	"sendmmsg": true, "accept": true, "accept4": true, "connect": true, "shutdown": true,
	"fsync": true, "fdatasync": true, "syncfs": true, "sync_file_range": true,
	"fallocate": true, "ftruncate": true, "flock": true, "fcntl": true, "ioctl": true,
	"getdents64": true, "lseek": true, "sendfile": true, "splice": true, "tee": true,
	"copy_file_range": true, "epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
	"epoll_ctl": true, "io_uring_enter": true, "fstat": true, "fstatfs": true, "readahead": true,
}

// fdKey is one descriptor of one process.
type fdKey struct{ pid, fd int32 }

// fdEntry is what a descriptor was last found to be.
type fdEntry struct {
	target   string
	dev, ino uint64 // of the open file: another file under the same number differs here
	// The syscall the entry was last checked for (thread, start): while it goes on, the
	// file it uses cannot change, whatever happens to the number meanwhile.
	tid     int32
	sinceNs uint64
	checked uint64 // tick number of the last check
	used    time.Time
}

// FdTargets names the file descriptors syscalls wait on. A descriptor is looked up in /proc
// once (readlink, and for a socket the /proc/net tables); after that a row costs nothing
// while its syscall goes on, and one stat per descriptor per tick otherwise, which tells a
// closed or dup'ed-over number (another inode) from the same file.
type FdTargets struct {
	procRoot string
	entries  map[fdKey]*fdEntry
	sockets  *socketTables
	tcp      TCPNamer // nil: TCP sockets are named from the tables too
	tick     uint64
	swept    time.Time
}

// TCPNamer names the TCP socket open as descriptor fd of thread tid, inode ino, as
// IPSocketName does, from the socket itself; false when it is not a TCP socket (or is
// gone).
type TCPNamer func(tid, fd int32, ino uint64) (string, bool)

// NameTCP makes n name TCP sockets, and the tables leave them out: the namespace's TCP
// table is the long one (every connection, and every one closed within the last minute in
// TIME_WAIT), and where sock_diag cannot be asked (threadcap's systemd unit allows no
// netlink socket) it was read from /proc/net/tcp, which formats them all.
func (c *FdTargets) NameTCP(n TCPNamer) {
	c.tcp = n
	c.sockets.noTCP = n != nil
}

// NewFdTargets names descriptors from /proc at procRoot.
func NewFdTargets(procRoot string) *FdTargets {
	return &FdTargets{procRoot: procRoot, entries: map[fdKey]*fdEntry{}, sockets: newSocketTables(procRoot)}
}

// NextTick starts a tick: each descriptor is checked at most once per tick.
func (c *FdTargets) NextTick() { c.tick++ }

// Target names descriptor fd of process pid, which thread tid has used since sinceNs in
// syscall name; "" when the syscall takes no descriptor or it cannot be told.
func (c *FdTargets) Target(name string, fd uint64, pid, tid int32, sinceNs uint64, now time.Time) string {
	if !fdSyscalls[name] || int64(int32(fd)) != int64(fd) || int32(fd) < 0 {
		return ""
	}
	key := fdKey{pid, int32(fd)}
	e := c.entries[key]
	if e != nil && (e.checked == c.tick || (e.tid == tid && e.sinceNs == sinceNs && sinceNs != 0)) {
		e.used = now
		return e.target
	}
	link := filepath.Join(c.procRoot, strconv.Itoa(int(pid)), "fd", strconv.Itoa(int(fd)))
	var st syscall.Stat_t
	if err := syscall.Stat(link, &st); err != nil {
		delete(c.entries, key)
		return ""
	}
	if e == nil || e.dev != uint64(st.Dev) || e.ino != st.Ino {
		target, err := os.Readlink(link)
		if err != nil {
			delete(c.entries, key)
			return ""
		}
		if ino, ok := socketInode(target); ok {
			if name, ok := c.nameTCP(tid, int32(fd), ino); ok {
				target = name
			} else {
				target = c.sockets.describe(pid, ino, c.tick, target)
			}
		}
		e = &fdEntry{target: target, dev: uint64(st.Dev), ino: st.Ino}
		c.entries[key] = e
	}
	e.tid, e.sinceNs, e.checked, e.used = tid, sinceNs, c.tick, now
	return e.target
}

func (c *FdTargets) nameTCP(tid, fd int32, ino uint64) (string, bool) {
	if c.tcp == nil {
		return "", false
	}
	return c.tcp(tid, fd, ino)
}

// socketInode parses the "socket:[12345]" a socket's /proc/PID/fd link reads.
func socketInode(link string) (uint64, bool) {
	rest, ok := strings.CutPrefix(link, "socket:[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return 0, false
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	return ino, err == nil
}

// Exited forgets the descriptors of a process whose main thread has exited.
func (c *FdTargets) Exited(pid int32) {
	for k := range c.entries {
		if k.pid == pid {
			delete(c.entries, k)
		}
	}
}

// Expire forgets descriptors no row has needed for IdleProcess, at most once a minute.
func (c *FdTargets) Expire(now time.Time) {
	if !SweepDue(&c.swept, now) {
		return
	}
	maps.DeleteFunc(c.entries, func(_ fdKey, e *fdEntry) bool { return Idle(now, e.used) })
	c.sockets.expire(c.tick)
}
