// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// fdIno dups conn's descriptor and returns the dup and its inode (the socket's); the dup is
// closed with the test, if not before.
func fdIno(t *testing.T, conn interface{ File() (*os.File, error) }) (*os.File, uint64) {
	t.Helper()
	f, err := conn.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return f, st.Ino
}

// openTCPSockets opens the TCP socket reader for the test, or skips it on a kernel too old
// for one (the kernel matrix's 6.1).
func openTCPSockets(t *testing.T) *TCPSockets {
	t.Helper()
	privileged.Require(t)
	s, err := OpenTCPSockets()
	if errors.Is(err, ErrNoTCPSockets) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// conn is both ends of a loopback TCP connection, and its listener.
type conn struct {
	client, server *net.TCPConn
	ln             *net.TCPListener
}

func connect(t *testing.T, network string) conn {
	ln, client, server := workload.LoopbackTCP(t, network)
	return conn{client, server, ln}
}

// TestTCPSocketsReadByDescriptor asks, in one batch, for: both ends of an IPv4 and an IPv6
// loopback connection, the server's end with 1000 bytes unread; a listener (Go's listens with
// MPTCP: its first subflow is read) with one
// connection waiting to be accepted; and things that must get no answer: a socket's
// descriptor with another inode (a reused number), a pipe, a thread that does not exist.
// After the client closes, the server's end is CLOSE_WAIT.
func TestTCPSocketsReadByDescriptor(t *testing.T) {
	s := openTCPSockets(t)
	tid := int32(unix.Gettid()) // any thread of the process: they share the descriptors
	c4, c6 := connect(t, "tcp4"), connect(t, "tcp6")
	for _, c := range []conn{c4, c6} {
		if _, err := c.client.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// One connection left waiting in c4's listener's accept queue.
	waiting, err := net.Dial("tcp4", c4.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	time.Sleep(50 * time.Millisecond) // for the data and the handshake to arrive

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()

	srv4, srv4Ino := fdIno(t, c4.server)
	cli4, cli4Ino := fdIno(t, c4.client)
	c4.client.Close() // the dup keeps it open, until the test closes it below
	srv6, srv6Ino := fdIno(t, c6.server)
	ln, lnIno := fdIno(t, c4.ln)
	srv4Fd, cli4Fd, srv6Fd, lnFd := int32(srv4.Fd()), int32(cli4.Fd()), int32(srv6.Fd()), int32(ln.Fd())
	asks := []TCPAsk{
		{Tid: tid, Fd: srv4Fd, Ino: srv4Ino},
		{Tid: tid, Fd: cli4Fd, Ino: cli4Ino},
		{Tid: tid, Fd: srv6Fd, Ino: srv6Ino},
		{Tid: tid, Fd: lnFd, Ino: lnIno},
		{Tid: tid, Fd: srv4Fd, Ino: cli4Ino}, // another socket's inode: the number was reused
		{Tid: tid, Fd: int32(pr.Fd()), Ino: srv4Ino},
		{Tid: 1 << 30, Fd: srv4Fd, Ino: srv4Ino}, // no such thread
		{Tid: tid, Fd: 1 << 20, Ino: srv4Ino},    // past the descriptor table
	}
	// Whatever the last batch left in a slot is not an answer: a stale one is set.
	asks[4].Sock.State = 1
	if err := s.Read(asks); err != nil {
		t.Fatal(err)
	}
	const established, listen, closeWait = 1, 10, 8
	for i, want := range []struct {
		name     string
		state    uint8
		rcvQueue uint32
	}{{"IPv4 server", established, 1000}, {"IPv4 client", established, 0}, {"IPv6 server", established, 1000}} {
		got := asks[i].Sock
		if got.State != want.state || got.RcvQueue != want.rcvQueue || got.SrttUs == 0 || got.Cwnd == 0 || got.SndQueue != 0 {
			t.Errorf("%s: %+v, want state %d, %d bytes unread, nothing unacknowledged, an rtt and a cwnd", want.name, got, want.state, want.rcvQueue)
		}
	}
	if got := asks[3].Sock; got.State != listen || got.RcvQueue != 1 || got.Unacked != 1 || got.SndQueue == 0 {
		t.Errorf("listener: %+v, want LISTEN with one connection to accept and its backlog", got)
	}
	for i, name := range []string{"a reused number", "a pipe", "no such thread", "past the table"} {
		if got := asks[4+i].Sock; got != (TCPSock{}) {
			t.Errorf("%s: %+v, want no answer", name, got)
		}
	}

	// Read first: closing with data unread would reset the connection instead.
	if _, err := c4.server.Read(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := cli4.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	again := []TCPAsk{{Tid: tid, Fd: srv4Fd, Ino: srv4Ino}}
	if err := s.Read(again); err != nil {
		t.Fatal(err)
	}
	if got := again[0].Sock; got.State != closeWait {
		t.Errorf("IPv4 server after the client closed: %+v, want CLOSE_WAIT", got)
	}
}

// TestTCPSocketsManyAsks reads more asks than one run of the program answers.
func TestTCPSocketsManyAsks(t *testing.T) {
	s := openTCPSockets(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, ino := fdIno(t, ln.(*net.TCPListener))
	fd := int32(f.Fd())
	asks := make([]TCPAsk, 2*maxAsks+3)
	for i := range asks {
		asks[i] = TCPAsk{Tid: int32(unix.Gettid()), Fd: fd, Ino: ino}
	}
	if err := s.Read(asks); err != nil {
		t.Fatal(err)
	}
	for i, a := range asks {
		if a.Sock.State != 10 {
			t.Fatalf("ask %d of %d: %+v, want LISTEN", i, len(asks), a.Sock)
		}
	}
}

// TestTCPSocketsReadFromWhereFound asks for a socket, then again naming where the answer
// found it: the same socket, read afresh from there (its unread bytes grown). Named with
// another socket's sock or socket, or a place that is neither at all, the walk answers
// instead; once the socket is closed, nothing does.
func TestTCPSocketsReadFromWhereFound(t *testing.T) {
	s := openTCPSockets(t)
	c := connect(t, "tcp4")
	tid := int32(unix.Gettid())
	cli, cliIno := fdIno(t, c.client)
	srv, srvIno := fdIno(t, c.server)
	cliFd, srvFd := int32(cli.Fd()), int32(srv.Fd())

	read := func(ask TCPAsk) TCPAsk {
		t.Helper()
		asks := []TCPAsk{ask}
		if err := s.Read(asks); err != nil {
			t.Fatal(err)
		}
		return asks[0]
	}
	first := read(TCPAsk{Tid: tid, Fd: cliFd, Ino: cliIno})
	if first.Sock.State != 1 || first.Sk == 0 || first.Socket == 0 {
		t.Fatalf("the client: %+v, want ESTABLISHED and where it was found", first)
	}
	if _, err := c.server.Write(make([]byte, 700)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	again := read(TCPAsk{Tid: tid, Fd: cliFd, Ino: cliIno, Sk: first.Sk, Socket: first.Socket})
	if again.Sock.State != 1 || again.Sock.RcvQueue != 700 || again.Sk != first.Sk || again.Socket != first.Socket {
		t.Errorf("the client asked for where it was found: %+v, want ESTABLISHED with 700 bytes unread, at %#x and %#x", again, first.Sk, first.Socket)
	}
	srvFirst := read(TCPAsk{Tid: tid, Fd: srvFd, Ino: srvIno})
	local := uint64(uintptr(unsafe.Pointer(&struct{ x [256]byte }{})))
	for _, wrong := range []struct {
		name       string
		sk, socket uint64
	}{
		{"the server's sock and socket", srvFirst.Sk, srvFirst.Socket},
		{"the server's sock", srvFirst.Sk, first.Socket},
		{"the server's socket", first.Sk, srvFirst.Socket},
		{"no socket", first.Sk, 0},
		{"an address below the kernel's", 1, first.Socket},
		{"a socket below the kernel's", first.Sk, 1},
		{"an address in this process", local, first.Socket},
		{"a socket in this process", first.Sk, local},
	} {
		got := read(TCPAsk{Tid: tid, Fd: cliFd, Ino: cliIno, Sk: wrong.sk, Socket: wrong.socket})
		if got.Sock != again.Sock || got.Sk != first.Sk || got.Socket != first.Socket {
			t.Errorf("the client asked for at %s: %+v, want %+v at %#x and %#x", wrong.name, got, again.Sock, first.Sk, first.Socket)
		}
	}

	c.client.Close()
	cli.Close()
	time.Sleep(50 * time.Millisecond)
	if got := read(TCPAsk{Tid: tid, Fd: cliFd, Ino: cliIno, Sk: first.Sk, Socket: first.Socket}); got.Sock != (TCPSock{}) || got.Sk != 0 || got.Socket != 0 {
		t.Errorf("the client, closed, asked for where it was: %+v, want no answer", got)
	}
}
