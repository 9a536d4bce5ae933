// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestTCPSocketsNamedInTheKernel: with TCPNames, fd_target names each TCP socket of this
// process (IPv4 and IPv6, listening, connected, an IPv4 client of a dual-stack
// listener) from the socket the kernel side reads, as the kernel names it to the
// socket's own calls (getsockname, getpeername and SO_DOMAIN, through Go's addresses);
// a UDP socket is still named from its namespace's table.
func TestTCPSocketsNamedInTheKernel(t *testing.T) {
	privileged.Require(t)
	tcp, err := bpf.OpenTCPSockets()
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	s := &Sampler{cfg: Config{TCP: tcp}}
	fds := procinfo.NewFdTargets("/proc")
	fds.NameTCP(s.nameTCP)
	fds.NextTick()

	type sock struct {
		f      *os.File
		local  net.Addr
		remote net.Addr // nil: listening or unconnected
	}
	var socks []sock
	keep := func(c interface{ File() (*os.File, error) }, local, remote net.Addr) {
		t.Helper()
		f, err := c.File() // a dup: the same socket under another number
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		socks = append(socks, sock{f, local, remote})
	}
	for _, l := range [][2]string{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}, {"tcp", ":0"}} {
		ln, err := net.Listen(l[0], l[1])
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		keep(ln.(*net.TCPListener), ln.Addr(), nil)
		host := map[string]string{"tcp4": "127.0.0.1", "tcp6": "::1", "tcp": "127.0.0.1"}[l[0]]
		c, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		keep(c.(*net.TCPConn), c.LocalAddr(), c.RemoteAddr())
		keep(a.(*net.TCPConn), a.LocalAddr(), a.RemoteAddr())
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	keep(pc.(*net.UDPConn), pc.LocalAddr(), nil)

	pid := int32(os.Getpid())
	for _, k := range socks {
		fd := k.f.Fd()
		domain, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			t.Fatal(err)
		}
		proto := "tcp"
		if _, udp := k.local.(*net.UDPAddr); udp {
			proto = "udp"
		}
		if domain == unix.AF_INET6 {
			proto += "6"
		}
		want := proto + " " + hostPort(k.local)
		if k.remote != nil {
			want += "->" + hostPort(k.remote)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(fd), &st); err != nil {
			t.Fatal(err)
		}
		name, named := s.nameTCP(pid, int32(fd), st.Ino)
		if got := fds.Target("read", uint64(fd), pid, pid, 1, time.Now()); got != want {
			t.Errorf("descriptor %d: fd_target %q, want %q", fd, got, want)
		}
		if named != (proto[:3] == "tcp") || (named && name != want) {
			t.Errorf("descriptor %d (%s): named in the kernel %q, %v; want %q for a TCP socket only", fd, want, name, named, want)
		}
	}
}

// hostPort is a socket address as fd_target writes it.
func hostPort(a net.Addr) string {
	switch a := a.(type) {
	case *net.TCPAddr:
		return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	case *net.UDPAddr:
		return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	}
	return a.String()
}

// BenchmarkNameTCP names a TCP socket from the kernel side's read of it, as fd_target
// does once for each socket it meets (procinfo's BenchmarkSocketTables times the tables
// it replaces).
func BenchmarkNameTCP(b *testing.B) {
	privileged.Require(b)
	tcp, err := bpf.OpenTCPSockets()
	if err != nil {
		b.Fatal(err)
	}
	defer tcp.Close()
	s := &Sampler{cfg: Config{TCP: tcp}}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		b.Fatal(err)
	}
	pid := int32(os.Getpid())
	for b.Loop() {
		if _, ok := s.nameTCP(pid, int32(f.Fd()), st.Ino); !ok {
			b.Fatal("the connection was not named")
		}
	}
}
