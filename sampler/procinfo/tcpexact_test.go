// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// targetOf is a connection's fd_target, as socketTables.describe writes it.
func targetOf(proto string, c net.Conn) string {
	return proto + " " + c.LocalAddr().String() + "->" + c.RemoteAddr().String()
}

// TestSocketsAskedForOneByOne reads sockets by their fd_target's addresses, without a
// dump, while the tick's budget lasts: connected IPv4 and IPv6 sockets, a listening one, an
// IPv4 peer of a dual-stack listener (v4-mapped in tcp6); a socket whose addresses now
// belong to another inode has no state; past the budget the namespace is dumped, and at the
// next tick at once.
func TestSocketsAskedForOneByOne(t *testing.T) {
	pid := int32(os.Getpid())
	c := NewTCPStates("/proc")
	tick := time.Now()
	connect := func(network, addr string) (net.Listener, net.Conn, net.Conn) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("%s: %v", network, err)
		}
		t.Cleanup(func() { ln.Close() })
		client, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close(); server.Close() })
		return ln, client, server
	}
	ln4, client4, server4 := connect("tcp4", "127.0.0.1:0")
	_, client6, _ := connect("tcp6", "[::1]:0")
	// A dual-stack listener's accepted IPv4 connection is a tcp6 socket with v4-mapped
	// addresses; its fd_target shows them as IPv4.
	dual, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skip(err)
	}
	defer dual.Close()
	mappedClient, err := net.Dial("tcp4", "127.0.0.1:"+portOf(dual.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer mappedClient.Close()
	mapped, err := dual.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()

	for _, tc := range []struct {
		name, target string
		ino          uint64
		state        string
	}{
		{"ipv4", targetOf("tcp", client4), socketIno(t, client4), "ESTABLISHED"},
		{"ipv6", targetOf("tcp6", client6), socketIno(t, client6), "ESTABLISHED"},
		{"v4-mapped", targetOf("tcp6", mapped), socketIno(t, mapped), "ESTABLISHED"},
		{"listening", "tcp " + ln4.Addr().String(), listenerIno(t, ln4), "LISTEN"},
	} {
		if got := c.socket(pid, tc.ino, tc.target, tick); got.State != tc.state {
			t.Errorf("%s (%s): %+v, want %s", tc.name, tc.target, got, tc.state)
		}
	}
	ns := c.byNetns[c.selfNetns]
	if ns.dumped.Equal(tick) {
		t.Fatal("the namespace was dumped, want each socket asked for")
	}
	if got := c.socket(pid, socketIno(t, server4), targetOf("tcp", client4), tick); got.State != "ESTABLISHED" || !ns.dumped.Equal(tick) {
		t.Errorf("another socket's addresses: %+v, dumped %v; want the dump's answer for the inode", got, ns.dumped.Equal(tick))
	}

	// A new tick, and rows on more sockets than the budget (as if the namespace's last
	// dump had had few): asked for one by one, each once, then dumped.
	ns.lastCount = 0
	var clients []net.Conn
	for range ns.exactBudget() + 1 {
		_, client, _ := connect("tcp4", "127.0.0.1:0")
		clients = append(clients, client)
	}
	next := tick.Add(time.Second)
	for i, client := range clients {
		for range 2 { // a second row of the same socket is answered from the first's
			if got := c.socket(pid, socketIno(t, client), targetOf("tcp", client), next); got.State != "ESTABLISHED" {
				t.Fatalf("socket %d at the next tick: %+v", i, got)
			}
		}
		if dumped := ns.dumped.Equal(next); dumped != (i == len(clients)-1) {
			t.Fatalf("after %d sockets of a budget of %d: dumped %v", i+1, ns.exactBudget(), dumped)
		}
	}
	// The tick after needed more than the budget too: dumped at its first row.
	ns.lastCount = 0
	after := next.Add(time.Second)
	c.socket(pid, socketIno(t, client4), targetOf("tcp", client4), after)
	if !ns.dumped.Equal(after) {
		t.Error("after a tick past the budget, the next was not dumped at once")
	}
	if _, _, ok := parseSockID("tcp nonsense"); ok {
		t.Error("parseSockID took a target without addresses")
	}
	if _, _, ok := parseSockID("tcp [::1]:80"); ok {
		t.Error("parseSockID took an IPv6 address for tcp")
	}
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

// listenerIno is a listening socket's inode.
func listenerIno(t *testing.T, ln net.Listener) uint64 {
	t.Helper()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
