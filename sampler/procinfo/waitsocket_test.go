// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestTCPSocketOfPollEpollAndSelect names the socket a poll on one descriptor, an epoll with
// one target, and a select or pselect6 on one descriptor wait on, as the inode the socket's
// /proc/PID/fd link has; a poll, an epoll or a select on two descriptors waits on no one
// socket.
func TestTCPSocketOfPollEpollAndSelect(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	f, err := client.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int32(f.Fd())
	ino := socketIno(t, client)
	pid := int32(os.Getpid())
	c := NewFdTargets("/proc")
	waits := newWaitCache()
	now := time.Now()

	one := []unix.PollFd{{Fd: fd, Events: unix.POLLIN}}
	two := []unix.PollFd{{Fd: fd, Events: unix.POLLIN}, {Fd: 0, Events: unix.POLLIN}}
	for _, tc := range []struct {
		name  string
		fds   []unix.PollFd
		found bool
	}{{"poll", one, true}, {"ppoll", one, true}, {"poll", two, false}} {
		args := [6]uint64{uint64(uintptr(unsafe.Pointer(&tc.fds[0]))), uint64(len(tc.fds))}
		got, ok := c.tcpSocket(waits, tc.name, args, pid, pid, 0, "", now)
		if ok != tc.found || (ok && (got.Ino != ino || got.Fd != fd)) {
			t.Errorf("%s on %d descriptors: socket %+v, %v; want fd %d, inode %d, %v", tc.name, len(tc.fds), got, ok, fd, ino, tc.found)
		}
	}

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		t.Fatal(err)
	}
	args := [6]uint64{uint64(ep)}
	if got, ok := c.tcpSocket(waits, "epoll_wait", args, pid, pid, 0, "anon_inode:[eventpoll]", now); !ok || got.Ino != ino || got.Fd != fd {
		t.Errorf("epoll_wait on one socket: %+v, %v; want fd %d, inode %d", got, ok, fd, ino)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(r.Fd()), &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.tcpSocket(waits, "epoll_pwait", args, pid, pid, 0, "anon_inode:[eventpoll]", now.Add(time.Second)); ok {
		t.Errorf("epoll_pwait on a socket and a pipe: socket %+v, want none", got)
	}
	// An epoll found with several targets is not read again for a while: when it comes
	// down to one, its waits show no socket until then, never a wrong one.
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, int(r.Fd()), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.tcpSocket(waits, "epoll_wait", args, pid, pid, 0, "anon_inode:[eventpoll]", now.Add(2*time.Second)); ok {
		t.Error("an epoll found with several targets a second ago was read again")
	}
	if got, ok := c.tcpSocket(waits, "epoll_wait", args, pid, pid, 0, "anon_inode:[eventpoll]", now.Add(IdleProcess+2*time.Second)); !ok || got.Ino != ino {
		t.Errorf("an epoll down to one target, after %v: %+v, %v; want inode %d", IdleProcess, got, ok, ino)
	}

	var oneSet, twoSet unix.FdSet
	oneSet.Set(int(fd))
	twoSet.Set(int(fd))
	twoSet.Set(int(r.Fd()))
	for _, tc := range []struct {
		name  string
		set   *unix.FdSet
		found bool
	}{{"select", &oneSet, true}, {"pselect6", &oneSet, true}, {"select", &twoSet, false}} {
		args := [6]uint64{uint64(max(fd, int32(r.Fd()))) + 1, uint64(uintptr(unsafe.Pointer(tc.set)))}
		got, ok := c.tcpSocket(waits, tc.name, args, pid, pid, 0, "", now)
		if ok != tc.found || (ok && (got.Ino != ino || got.Fd != fd)) {
			t.Errorf("%s on %v: socket %+v, %v; want fd %d, inode %d, %v", tc.name, *tc.set, got, ok, fd, ino, tc.found)
		}
	}
}

// TestSelectedFd reads a select's sets from this process's memory, as the sampler reads a
// waiting thread's: one descriptor across them is that one, whichever set or sets hold it;
// two are several; none, NULL sets, an nfds past FD_SETSIZE or a set that cannot be read
// cannot be told.
func TestSelectedFd(t *testing.T) {
	set := func(fds ...int) *unix.FdSet {
		s := new(unix.FdSet)
		for _, fd := range fds {
			s.Set(fd)
		}
		return s
	}
	unreadable := new(unix.FdSet) // stands for an address in the first page, never mapped
	pid := int32(os.Getpid())
	for _, tc := range []struct {
		name  string
		nfds  uint64
		sets  [3]*unix.FdSet // readfds, writefds, exceptfds
		fd    int32
		count int
	}{
		{"one in readfds", 6, [3]*unix.FdSet{set(5), nil, nil}, 5, 1},
		{"one in writefds", 6, [3]*unix.FdSet{nil, set(5), nil}, 5, 1},
		{"one in exceptfds", 6, [3]*unix.FdSet{nil, nil, set(5)}, 5, 1},
		{"the same in readfds and writefds", 6, [3]*unix.FdSet{set(5), set(5), set()}, 5, 1},
		{"two in readfds", 10, [3]*unix.FdSet{set(5, 9), nil, nil}, 0, 2},
		{"one in readfds, another in writefds", 10, [3]*unix.FdSet{set(5), set(9), nil}, 0, 2},
		{"a second one from nfds on, not waited on", 6, [3]*unix.FdSet{set(5, 9), nil, nil}, 5, 1},
		{"one in the eleventh long", 701, [3]*unix.FdSet{set(700), nil, nil}, 700, 1},
		{"nfds FD_SETSIZE", 1024, [3]*unix.FdSet{set(1023), nil, nil}, 1023, 1},
		{"nfds 0", 0, [3]*unix.FdSet{set(5), nil, nil}, 0, 0},
		{"empty sets", 6, [3]*unix.FdSet{set(), set(), set()}, 0, 0},
		{"NULL sets", 6, [3]*unix.FdSet{}, 0, 0},
		{"nfds over FD_SETSIZE", 1025, [3]*unix.FdSet{set(5), nil, nil}, 0, 0},
		{"nfds negative as the kernel's int", 1<<32 - 1, [3]*unix.FdSet{set(5), nil, nil}, 0, 0},
		{"nfds above the kernel's int", 1<<32 | 6, [3]*unix.FdSet{set(5), nil, nil}, 5, 1},
		{"unreadable readfds", 6, [3]*unix.FdSet{unreadable, nil, nil}, 0, 0},
		{"readable readfds, unreadable writefds", 6, [3]*unix.FdSet{set(5), unreadable, nil}, 0, 0},
	} {
		args := [6]uint64{tc.nfds}
		for i, s := range tc.sets {
			switch s {
			case nil:
			case unreadable:
				args[1+i] = 8
			default:
				args[1+i] = uint64(uintptr(unsafe.Pointer(s)))
			}
		}
		for _, name := range []string{"select", "pselect6"} {
			if fd, count := waitedFd("/proc", name, args, pid); fd != tc.fd || count != tc.count {
				t.Errorf("%s, %s: descriptor %d of %d; want %d of %d", name, tc.name, fd, count, tc.fd, tc.count)
			}
		}
		runtime.KeepAlive(tc.sets)
	}
}
