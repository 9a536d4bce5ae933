// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestTCPReadInTheKernelAsSockDiagShowsIt reads quiet sockets both ways, in the kernel
// (bpf.TCPSockets) and through sock_diag (what ss -ti asks, and what a kernel without
// bpf_task_from_pid uses), and expects every tcp_ column to be the same: both ends of IPv4
// and IPv6 loopback connections with bytes unread on both sides, a listener (Go's: MPTCP) with
// connections waiting to be accepted, an end in CLOSE_WAIT and its peer in FIN_WAIT2.
func TestTCPReadInTheKernelAsSockDiagShowsIt(t *testing.T) {
	privileged.Require(t)
	kernel, err := bpf.OpenTCPSockets()
	if err != nil {
		t.Fatal(err)
	}
	defer kernel.Close()
	diag := procinfo.NewTCPStates("/proc")
	defer diag.Close()

	var socks []procinfo.TCPSocket
	var names []string
	pid := int32(os.Getpid())
	add := func(name string, c interface{ File() (*os.File, error) }, addr net.Addr) {
		f, err := c.File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		target := "tcp " + addr.String()
		if a := addr.(*net.TCPAddr); a.IP.To4() == nil {
			target = "tcp6 " + addr.String()
		}
		socks = append(socks, procinfo.TCPSocket{Pid: pid, Tid: int32(unix.Gettid()), Fd: int32(f.Fd()), Ino: st.Ino, Target: target})
		names = append(names, name)
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, client, server := workload.LoopbackTCP(t, network)
		for range 2 { // left to accept
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		if _, err := client.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write(make([]byte, 3000)); err != nil {
			t.Fatal(err)
		}
		add(network+" client", client, client.LocalAddr())
		add(network+" server", server, server.LocalAddr())
		add(network+" listener", ln, ln.Addr())
	}
	// A half-closed pair: the closing end in FIN_WAIT2, its peer in CLOSE_WAIT.
	_, closing, peer := workload.LoopbackTCP(t, "tcp4")
	if err := closing.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	add("FIN_WAIT2", closing, closing.LocalAddr())
	add("CLOSE_WAIT", peer, peer.LocalAddr())
	time.Sleep(100 * time.Millisecond) // for the data and the handshakes to arrive

	asks := make([]bpf.TCPAsk, len(socks))
	for i, s := range socks {
		asks[i] = bpf.TCPAsk{Tid: s.Tid, Fd: s.Fd, Ino: s.Ino}
	}
	if err := kernel.Read(asks); err != nil {
		t.Fatal(err)
	}
	tick := time.Now()
	for i, s := range socks {
		want := diag.Diag(s, tick)
		k := asks[i].Sock
		got := state.TCPInfo{State: procinfo.TCPStateName(k.State), SrttUs: int64(k.SrttUs), Retrans: int64(k.Retrans),
			Lost: int64(k.Lost), Cwnd: int64(k.Cwnd), Unacked: int64(k.Unacked), RcvQueue: int64(k.RcvQueue), SndQueue: int64(k.SndQueue)}
		if want.State == "" || got != want {
			t.Errorf("%s (%s):\n in the kernel %+v\n sock_diag     %+v", names[i], s.Target, got, want)
		}
	}
}
