// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/threadcap/threadcap/test/privileged"
)

// fdIno is the inode of the socket of a connection, listener or packet socket.
func fdIno(t *testing.T, c syscall.Conn) uint64 {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	var statErr error
	if err := raw.Control(func(fd uintptr) { statErr = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	if statErr != nil {
		t.Fatal(statErr)
	}
	return st.Ino
}

// TestSocketsDescribedFromSockDiagAsFromProcNet describes this process's sockets of every
// kind fd_target names (TCP over IPv4 and IPv6, listening and connected, an IPv4 client
// of a dual-stack listener, UDP unconnected and connected) from sock_diag, beside
// connections in TIME_WAIT, and finds each described as its namespace's /proc/net tables
// describe it.
func TestSocketsDescribedFromSockDiagAsFromProcNet(t *testing.T) {
	privileged.Require(t)
	var socks []syscall.Conn
	keep := func(c any) {
		t.Helper()
		sc, ok := c.(syscall.Conn)
		if !ok {
			t.Fatalf("%T has no descriptor", c)
		}
		socks = append(socks, sc)
		if cl, ok := c.(interface{ Close() error }); ok {
			t.Cleanup(func() { cl.Close() })
		}
	}
	for _, l := range [][2]string{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}, {"tcp", ":0"}} {
		ln, err := net.Listen(l[0], l[1])
		if err != nil {
			t.Fatal(err)
		}
		keep(ln)
		port := ln.Addr().(*net.TCPAddr).Port
		client := map[string]string{"tcp4": "127.0.0.1", "tcp6": "::1", "tcp": "127.0.0.1"}[l[0]]
		c, err := net.Dial("tcp", net.JoinHostPort(client, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		keep(c)
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		keep(s)
		// A connection this side closes first: its socket waits in TIME_WAIT, inodeless.
		gone, err := net.Dial("tcp", net.JoinHostPort(client, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		peer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		gone.Close()
		peer.Close()
	}
	for _, u := range [][2]string{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		pc, err := net.ListenPacket(u[0], u[1])
		if err != nil {
			t.Fatal(err)
		}
		keep(pc)
		c, err := net.Dial(u[0], pc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		keep(c)
	}

	proc := filepath.Join("/proc", strconv.Itoa(os.Getpid()))
	diag := &socketTable{byIno: map[uint64]string{}}
	diag.diag = openDiag(diagSocketIn(filepath.Join(proc, "ns", "net")))
	defer diag.diag.close()
	if diag.diag.openErr != nil {
		t.Fatal(diag.diag.openErr)
	}
	if err := diag.readDiag(false); err != nil {
		t.Fatal(err)
	}
	fromProc := &socketTable{byIno: map[uint64]string{}}
	fromProc.readProc(proc, false)
	for _, c := range socks {
		ino := fdIno(t, c)
		got, want := diag.byIno[ino], fromProc.byIno[ino]
		if got == "" || got != want {
			t.Errorf("socket %d: sock_diag describes it %q, /proc/net %q", ino, got, want)
		}
	}
	t.Logf("%d sockets described alike; the namespace's: %d from sock_diag, %d from /proc/net (TIME_WAIT's included)",
		len(socks), len(diag.byIno), len(fromProc.byIno))
}

// BenchmarkSocketTables reads a namespace's sockets as a tick that meets a new socket
// does, from sock_diag and from /proc/net, beside 10,000 connections in TIME_WAIT (what
// a minute of 170 connections a second leaves; Linux keeps them 60 s) and 100 open ones.
// Its per-op ratio is BENCHMARKS.md's.
func BenchmarkSocketTables(b *testing.B) {
	privileged.Require(b)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 128)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() (net.Conn, net.Conn) {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		return c, <-accepted
	}
	for range 10_000 {
		c, s := dial()
		c.Close() // this side first: it waits in TIME_WAIT
		s.Close()
	}
	for range 100 {
		c, s := dial()
		defer c.Close()
		defer s.Close()
	}
	proc := filepath.Join("/proc", strconv.Itoa(os.Getpid()))
	t := &socketTable{byIno: map[uint64]string{}}
	t.diag = openDiag(diagSocketIn(filepath.Join(proc, "ns", "net")))
	defer t.diag.close()
	if t.diag.openErr != nil {
		b.Fatal(t.diag.openErr)
	}
	b.Run("sock_diag", func(b *testing.B) {
		for b.Loop() {
			clear(t.byIno)
			if err := t.readDiag(false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc_net", func(b *testing.B) {
		for b.Loop() {
			clear(t.byIno)
			t.readProc(proc, false)
		}
	})
}
