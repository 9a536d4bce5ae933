// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// tcpRoleEnv makes the test binary a sender or receiver of TestTCPHelperProcess.
const tcpRoleEnv = "THREADCAP_TCP_ROLE"

// tcpPort is the receiver's, in its own network namespace.
const tcpPort = "5001"

// TestTCPHelperProcess is not a test: run with tcpRoleEnv set, inside a network namespace,
// it is the receiver (reads everything; SIGUSR1 shuts its side for writing, so that the
// sender's socket goes to CLOSE_WAIT and it keeps writing) or the sender (a blocking socket
// from raw syscalls, not Go's netpoller, so that its thread waits in write(2) on it).
func TestTCPHelperProcess(t *testing.T) {
	role, addr := os.Getenv(tcpRoleEnv), os.Getenv("THREADCAP_TCP_ADDR")
	switch role {
	case "receive":
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, tcpPort))
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("listening\n")
		c, err := ln.Accept()
		if err != nil {
			os.Exit(2)
		}
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() { <-usr1; c.(*net.TCPConn).CloseWrite() }()
		io.Copy(io.Discard, c)
		os.Exit(0)
	case "send":
		ip := net.ParseIP(addr)
		var fd int
		var err error
		if ip4 := ip.To4(); ip4 != nil {
			fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
			if err == nil {
				sa := &syscall.SockaddrInet4{Port: 5001}
				copy(sa.Addr[:], ip4)
				err = syscall.Connect(fd, sa)
			}
		} else {
			fd, err = syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM, 0)
			if err == nil {
				sa := &syscall.SockaddrInet6{Port: 5001}
				copy(sa.Addr[:], ip.To16())
				err = syscall.Connect(fd, sa)
			}
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		buf := make([]byte, 64<<10)
		for {
			if _, err := syscall.Write(fd, buf); err != nil && err != syscall.EINTR {
				os.Exit(0)
			}
		}
	}
}

// ssInfo is what ss -tin says of the one connection of a namespace.
type ssInfo struct {
	state   string
	srttUs  int64
	retrans int64
	text    string
}

var (
	ssRtt     = regexp.MustCompile(`\brtt:([0-9.]+)/`)
	ssRetrans = regexp.MustCompile(`\bretrans:\d+/(\d+)`)
)

// ssOf runs ss -tin in network namespace ns.
func ssOf(t *testing.T, ns string) ssInfo {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-tin").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s := ssInfo{text: string(out)}
	if len(lines) < 3 {
		return s
	}
	s.state = strings.Fields(lines[1])[0]
	if m := ssRtt.FindStringSubmatch(lines[2]); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		s.srttUs = int64(ms * 1000)
	}
	if m := ssRetrans.FindStringSubmatch(lines[2]); m != nil {
		s.retrans, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return s
}

// netnsPair makes two network namespaces joined by a veth pair with IPv4 and IPv6
// addresses, the sender's side shaped by tbf to 2 Mbit/s with 100 ms of queue and using
// reno: round trips grow to about that queue, and tbf drops what overflows it. Traffic
// stays in them.
func netnsPair(t *testing.T, tag string) (sendNs, recvNs string) {
	t.Helper()
	tag += strconv.Itoa(os.Getpid())
	sendNs, recvNs = "tcsend"+tag, "tcrecv"+tag
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sh("netns", "add", sendNs)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", sendNs).Run() })
	sh("netns", "add", recvNs)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", recvNs).Run() })
	sh("link", "add", "tcs"+tag, "netns", sendNs, "type", "veth", "peer", "name", "tcr"+tag, "netns", recvNs)
	for _, c := range []struct{ ns, dev, v4, v6 string }{
		{sendNs, "tcs" + tag, "10.230.0.1/24", "fd00:230::1/64"},
		{recvNs, "tcr" + tag, "10.230.0.2/24", "fd00:230::2/64"},
	} {
		sh("-n", c.ns, "link", "set", "lo", "up")
		sh("-n", c.ns, "addr", "add", c.v4, "dev", c.dev)
		sh("-n", c.ns, "-6", "addr", "add", c.v6, "dev", c.dev, "nodad")
		sh("-n", c.ns, "link", "set", c.dev, "up")
	}
	// Reno fills the queue until tbf drops; bbr, this kernel's default, paces itself to
	// the bottleneck after its start and then neither queues nor loses.
	if out, err := exec.Command("ip", "netns", "exec", sendNs, "sh", "-c",
		"echo reno > /proc/sys/net/ipv4/tcp_congestion_control").CombinedOutput(); err != nil {
		t.Fatalf("setting reno: %v\n%s", err, out)
	}
	if out, err := exec.Command("ip", "netns", "exec", sendNs, "tc", "qdisc", "add", "dev", "tcs"+tag,
		"root", "tbf", "rate", "2mbit", "burst", "16kb", "latency", "100ms").CombinedOutput(); err != nil {
		t.Fatalf("tc: %v\n%s", err, out)
	}
	return sendNs, recvNs
}

// TestTCPStateOfABlockedSender runs a sender blocked in write(2) on a connection through a
// tbf bottleneck, in namespaces the test makes, IPv4 and IPv6. At every tick, ss -tin is
// polled in the sender's namespace just before and just after: the row's srtt is within 20%
// of what ss says around it, its retransmissions between ss's before and after and
// growing as the bottleneck drops, its state ESTABLISHED; once the receiver shuts its side,
// CLOSE_WAIT.
func TestTCPStateOfABlockedSender(t *testing.T) {
	privileged.Require(t)
	for _, tc := range []struct{ name, addr string }{{"ipv4", "10.230.0.2"}, {"ipv6", "fd00:230::2"}} {
		t.Run(tc.name, func(t *testing.T) {
			sendNs, recvNs := netnsPair(t, tc.name[3:])
			recv := exec.Command("ip", "netns", "exec", recvNs, os.Args[0], "-test.run=^TestTCPHelperProcess$")
			recv.Env = append(os.Environ(), tcpRoleEnv+"=receive", "THREADCAP_TCP_ADDR="+tc.addr)
			out, err := recv.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			workload.Process(t, recv)
			if _, err := out.Read(make([]byte, 16)); err != nil {
				t.Fatalf("the receiver did not start: %v", err)
			}
			send := exec.Command("ip", "netns", "exec", sendNs, os.Args[0], "-test.run=^TestTCPHelperProcess$")
			send.Env = append(os.Environ(), tcpRoleEnv+"=send", "THREADCAP_TCP_ADDR="+tc.addr)
			send.Stderr = os.Stderr
			pid := int32(workload.Process(t, send))
			s, rec := start(t, sampler.Filter{All: true, Pids: []int32{pid}}, 200*time.Millisecond)

			// tickRow ticks and returns the sender's row in write on its socket, with ss's
			// view just before and just after the tick.
			tickRow := func() (state.Sample, ssInfo, ssInfo, bool) {
				time.Sleep(200 * time.Millisecond)
				before := ssOf(t, sendNs)
				if err := s.Tick(time.Now()); err != nil {
					t.Fatal(err)
				}
				after := ssOf(t, sendNs)
				for _, r := range rec.ticks[len(rec.ticks)-1].rows {
					if r.Pid == pid && r.Syscall == "write" && strings.HasPrefix(r.FdTarget, "tcp") {
						return r, before, after, true
					}
				}
				return state.Sample{}, before, after, false
			}
			var compared, agreed int
			var firstRetrans, lastRetrans int64 = -1, -1
			for range 30 {
				r, before, after, ok := tickRow()
				if !ok || before.state != "ESTAB" || after.state != "ESTAB" {
					continue
				}
				lo, hi := min(before.srttUs, after.srttUs), max(before.srttUs, after.srttUs)
				t.Logf("%s: srtt %d µs (ss %d..%d), retrans %d (ss %d..%d), lost %d, cwnd %d, unacked %d, send queue %d",
					r.TCP.State, r.TCP.SrttUs, lo, hi, r.TCP.Retrans, before.retrans, after.retrans,
					r.TCP.Lost, r.TCP.Cwnd, r.TCP.Unacked, r.TCP.SndQueue)
				if r.TCP.State != "ESTABLISHED" {
					t.Errorf("sender's row in write has tcp_state %q while ss says ESTAB: %+v", r.TCP.State, r)
					continue
				}
				compared++
				if float64(r.TCP.SrttUs) >= 0.8*float64(lo) && float64(r.TCP.SrttUs) <= 1.2*float64(hi) {
					agreed++
				}
				if r.TCP.Retrans < before.retrans || r.TCP.Retrans > after.retrans {
					t.Errorf("tcp_retrans %d, while ss says %d just before the tick and %d just after", r.TCP.Retrans, before.retrans, after.retrans)
				}
				if firstRetrans < 0 {
					firstRetrans = r.TCP.Retrans
				}
				lastRetrans = r.TCP.Retrans
				if r.TCP.SndQueue <= 0 || r.TCP.Cwnd <= 0 {
					t.Errorf("a sender blocked in write with no send queue or congestion window: %+v", r.TCP)
				}
			}
			t.Logf("ss at the last tick:\n%s", ssOf(t, sendNs).text)
			t.Logf("srtt within 20%% of ss at %d of %d ticks; retransmissions %d at the first, %d at the last", agreed, compared, firstRetrans, lastRetrans)
			if compared < 10 || agreed < compared*9/10 {
				t.Errorf("srtt within 20%% of ss at %d of %d ticks, want at least 10 ticks and 90%% of them", agreed, compared)
			}
			if lastRetrans <= firstRetrans || firstRetrans < 0 {
				t.Errorf("retransmissions from %d to %d: the bottleneck should drop, and tcp_retrans grow", firstRetrans, lastRetrans)
			}

			if err := recv.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			var closeWait bool
			for range 20 {
				r, _, after, ok := tickRow()
				if ok && r.TCP.State == "CLOSE_WAIT" && after.state == "CLOSE-WAIT" {
					closeWait = true
					break
				}
			}
			if !closeWait {
				t.Error("no row of the sender in write with tcp_state CLOSE_WAIT after the receiver shut its side")
			}
		})
	}
}

// TestTCPStateOfWaitsOnOneSocket expects threads blocked in poll, select and pselect6 on
// one TCP socket and in epoll_wait on an epoll whose one target is that socket to have its
// state in their rows, and threads in poll or select on the socket and a pipe none.
func TestTCPStateOfWaitsOnOneSocket(t *testing.T) {
	privileged.Require(t)
	_, client, server := workload.LoopbackTCP(t, "tcp4")
	f, err := client.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		t.Fatal(err)
	}
	// readable is select's nfds and readfds for fds. syscall.Select is select(2) on amd64
	// (unix.Select is pselect6 there too) and pselect6 on arm64, which has no select.
	readable := func(fds ...int) (int, *syscall.FdSet) {
		set := new(syscall.FdSet)
		for _, fd := range fds {
			set.Bits[fd/64] |= 1 << (fd % 64)
		}
		return slices.Max(fds) + 1, set
	}

	// Each waits on its own thread until the server writes.
	blocked := func(wait func()) int32 {
		tids := make(chan int32)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- int32(unix.Gettid())
			wait()
		}()
		return <-tids
	}
	cases := []struct {
		name    string
		tid     int32
		syscall string // in the row's syscall name: arm64 has only pselect6 for select
		state   string
	}{
		{"poll on the socket", blocked(func() { unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1) }), "poll", "ESTABLISHED"},
		{"poll on the socket and a pipe", blocked(func() {
			unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(pr.Fd()), Events: unix.POLLIN}}, -1)
		}), "poll", ""},
		{"epoll on the socket", blocked(func() { unix.EpollWait(ep, make([]unix.EpollEvent, 1), -1) }), "epoll", "ESTABLISHED"},
		{"select on the socket", blocked(func() {
			n, set := readable(fd)
			syscall.Select(n, set, nil, nil, nil)
		}), "select", "ESTABLISHED"},
		{"pselect6 on the socket", blocked(func() {
			n, set := readable(fd)
			unix.Pselect(n, (*unix.FdSet)(set), nil, nil, nil, nil)
		}), "pselect6", "ESTABLISHED"},
		{"select on the socket and a pipe", blocked(func() {
			n, set := readable(fd, int(pr.Fd()))
			syscall.Select(n, set, nil, nil, nil)
		}), "select", ""},
	}
	defer server.Write([]byte("wake"))

	s, rec := start(t, sampler.Filter{All: true, Pids: []int32{int32(os.Getpid())}}, 100*time.Millisecond)
	var rows map[int32]state.Sample
	inTheirSyscalls := func() bool {
		for _, c := range cases {
			if !strings.Contains(rows[c.tid].Syscall, c.syscall) {
				return false
			}
		}
		return true
	}
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		rows = rec.ticks[len(rec.ticks)-1].rows
		if inTheirSyscalls() {
			break
		}
	}
	for _, c := range cases {
		r, ok := rows[c.tid]
		if !ok || !strings.Contains(r.Syscall, c.syscall) {
			t.Errorf("thread in %s: no row in its syscall: %+v", c.name, r)
			continue
		}
		if r.TCP.State != c.state || (c.state != "" && r.TCP.SrttUs <= 0) {
			t.Errorf("thread in %s (%s, fd_target %q): tcp %+v, want state %q", c.name, r.Syscall, r.FdTarget, r.TCP, c.state)
		}
	}
}
