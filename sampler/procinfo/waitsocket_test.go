// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestTCPSocketOfPollAndEpoll names the socket a poll on one descriptor, and an epoll with
// one target, wait on, as the inode the socket's /proc/PID/fd link has; a poll or an epoll
// on two descriptors waits on no one socket.
func TestTCPSocketOfPollAndEpoll(t *testing.T) {
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
	if _, ok := c.tcpSocket(waits, "select", [6]uint64{uint64(fd) + 1}, pid, pid, 0, "", now); ok {
		t.Error("select: a socket, want none")
	}
}
