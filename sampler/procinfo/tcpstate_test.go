// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// socketIno is the inode of a connection's socket, as /proc/PID/fd shows it.
func socketIno(t *testing.T, c net.Conn) uint64 {
	t.Helper()
	f, err := c.(*net.TCPConn).File() // a dup: same socket, same inode
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

// TestTCPStatesOfLoopbackConnections reads a connection of this process over IPv4 and
// IPv6 loopback: established with data unread on one side, then CLOSE_WAIT once the peer
// closes; an inode that is no TCP socket has no state.
func TestTCPStatesOfLoopbackConnections(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		defer ln.Close()
		client, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // for the data to arrive at the server's queue
		c := NewTCPStates("/proc")
		pid := int32(os.Getpid())
		tick := time.Now()
		got := c.socket(pid, socketIno(t, server), "", tick)
		if got.State != "ESTABLISHED" || got.RcvQueue != 1000 || got.SrttUs <= 0 || got.Cwnd <= 0 {
			t.Errorf("%s: server side %+v, want ESTABLISHED with 1000 bytes unread, an rtt and a cwnd", network, got)
		}
		// Read first: closing with data unread would reset the connection instead.
		if _, err := io.ReadFull(server, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		time.Sleep(50 * time.Millisecond)
		// The same tick holds its dump; the next one reads again.
		if again := c.socket(pid, socketIno(t, client), "", tick); again.State != "ESTABLISHED" {
			t.Errorf("%s: client at the same tick %+v, want the tick's dump: ESTABLISHED", network, again)
		}
		if got := c.socket(pid, socketIno(t, client), "", tick.Add(time.Second)); got.State != "CLOSE_WAIT" {
			t.Errorf("%s: client after the peer closed: %+v, want CLOSE_WAIT", network, got)
		}
		if got := c.socket(pid, 1, "", tick.Add(time.Second)); got.State != "" {
			t.Errorf("%s: inode 1: %+v, want no state", network, got)
		}
		c.Close()
	}
}

func TestIsTCP(t *testing.T) {
	for target, want := range map[string]bool{
		"tcp 127.0.0.1:5432->127.0.0.1:40112": true, "tcp6 [::]:80": true, "udp 0.0.0.0:53": false,
		"unix /run/x.sock": false, "": false, "tcpdump": false, "socket:[" + strconv.Itoa(1) + "]": false,
	} {
		if IsTCP(target) != want {
			t.Errorf("IsTCP(%q) = %v", target, !want)
		}
	}
}
