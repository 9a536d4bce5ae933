// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
)

// TCPSource reads TCP sockets in the kernel, a batch of asks at a time, each answered in
// place; *bpf.TCPSockets implements it.
type TCPSource interface {
	Read(asks []bpf.TCPAsk) error
}

// tcpBatch is the rows of s.rows that wait on a TCP socket, and the sockets: a row finds
// its socket as it is made (addRow), and the batch's rows get their sockets' state just
// before they are handed to the sink (fill), with one run of the kernel side for all.
type tcpBatch struct {
	rows  []int    // indexes in s.rows
	slots []uint32 // their records' slots (noSlot: a seeded thread's row)
	socks []procinfo.TCPSocket
	asks  []bpf.TCPAsk  // fill's, kept from batch to batch
	name  [1]bpf.TCPAsk // nameTCP's
	log   rateLimit
}

// noSlot is the slot of a row that has no record, hence no snapshot.
const noSlot = ^uint32(0)

// knownSock is where the kernel side last found a thread's socket and its sock: asked for
// again, the same socket is read from there, without walking to it from the descriptor
// (the kernel side checks that the sock still is that socket's). A snapshot keeps it.
type knownSock struct {
	fd     int32
	ino    uint64
	sk     uint64
	socket uint64
}

// askTCP notes that row, about to be appended to s.rows, waits on a TCP socket, if it does.
// slot is the row's record's (noSlot for a seeded thread's row).
func (s *Sampler) askTCP(row *state.Sample, th *state.Thread, slot uint32, wall time.Time) {
	sock, ok := s.tcp.Socket(s.fds, row.Syscall, th.Args, th.Pid, th.Tid, th.SyscallNs, row.FdTarget, wall)
	if !ok {
		return
	}
	s.tcpRows.rows = append(s.tcpRows.rows, len(s.rows))
	s.tcpRows.slots = append(s.tcpRows.slots, slot)
	s.tcpRows.socks = append(s.tcpRows.socks, sock)
}

// fillTCP gives the rows of the batch that wait on a TCP socket its state: read in the
// kernel with cfg.TCP, else from sock_diag (a kernel without bpf_task_from_pid).
func (s *Sampler) fillTCP(wall time.Time) {
	b := &s.tcpRows
	defer func() { b.rows, b.slots, b.socks = b.rows[:0], b.slots[:0], b.socks[:0] }()
	if len(b.rows) == 0 {
		return
	}
	if s.cfg.TCP == nil {
		for i, r := range b.rows {
			s.rows[r].TCP = s.tcp.Diag(b.socks[i], wall)
		}
		return
	}
	b.asks = b.asks[:0]
	for i, sock := range b.socks {
		ask := bpf.TCPAsk{Tid: sock.Tid, Fd: sock.Fd, Ino: sock.Ino}
		if k := s.knownSock(b.slots[i], sock.Tid); k != nil && k.fd == sock.Fd && k.ino == sock.Ino {
			ask.Sk, ask.Socket = k.sk, k.socket
		}
		b.asks = append(b.asks, ask)
	}
	if err := s.cfg.TCP.Read(b.asks); err != nil {
		if b.log.allow(wall) {
			s.cfg.Log.WithError(err).Warn("reading TCP sockets failed: the tcp_ columns of this tick's rows are empty")
		}
		return
	}
	for i, r := range b.rows {
		ask := &b.asks[i]
		s.rows[r].TCP = tcpInfo(ask.Sock)
		if k := s.knownSock(b.slots[i], ask.Tid); k != nil {
			*k = knownSock{fd: ask.Fd, ino: ask.Ino, sk: ask.Sk, socket: ask.Socket}
		}
	}
}

// knownSock is the socket known to thread tid's snapshot in slot; nil when the slot has
// none or holds another thread by now.
func (s *Sampler) knownSock(slot uint32, tid int32) *knownSock {
	if slot == noSlot || int(slot) >= len(s.prev) || s.prev[slot].tid != tid {
		return nil
	}
	return &s.prev[slot].tcp
}

// nameTCP names the TCP socket of descriptor fd of thread tid, inode ino, for fd_target,
// from the kernel side's read of it: one run of the reader, for a socket not named before.
func (s *Sampler) nameTCP(tid, fd int32, ino uint64) (string, bool) {
	ask := &s.tcpRows.name[0]
	*ask = bpf.TCPAsk{Tid: tid, Fd: fd, Ino: ino}
	if err := s.cfg.TCP.Read(s.tcpRows.name[:]); err != nil || ask.Sock.State == 0 {
		return "", false
	}
	k := &ask.Sock
	proto, n := "tcp", net.IPv4len
	if k.Family == unix.AF_INET6 {
		proto, n = "tcp6", net.IPv6len
	}
	return procinfo.IPSocketName(proto, k.State == tcpListen, net.IP(k.Local[:n]), k.LocalPort,
		net.IP(k.Remote[:n]), k.RemotePort), true
}

// tcpListen is TCP_LISTEN (include/net/tcp_states.h).
const tcpListen = 10

// tcpInfo is the tcp_ columns of what the kernel side read of a socket.
func tcpInfo(k bpf.TCPSock) state.TCPInfo {
	if k.State == 0 {
		return state.TCPInfo{}
	}
	return state.TCPInfo{
		State: procinfo.TCPStateName(k.State), SrttUs: int64(k.SrttUs), Retrans: int64(k.Retrans),
		Lost: int64(k.Lost), Cwnd: int64(k.Cwnd), Unacked: int64(k.Unacked),
		RcvQueue: int64(k.RcvQueue), SndQueue: int64(k.SndQueue),
	}
}
