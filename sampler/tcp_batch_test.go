// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"errors"
	"testing"
	"time"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
)

// fakeTCP answers asks from its sockets, by (tid, fd, inode), as the kernel side would, each
// found where its inode says (sk: the inode + 1000, its socket the inode + 2000), and counts
// its runs and the asks that named where their socket was.
type fakeTCP struct {
	socks map[bpf.TCPAsk]bpf.TCPSock
	runs  int
	asked int
	known map[int32][2]uint64 // the sk and socket each thread's last ask named
	err   error
}

func (f *fakeTCP) Read(asks []bpf.TCPAsk) error {
	f.runs++
	f.asked += len(asks)
	if f.err != nil {
		return f.err
	}
	for i := range asks {
		a := &asks[i]
		f.known[a.Tid] = [2]uint64{a.Sk, a.Socket}
		var ok bool
		a.Sock, ok = f.socks[bpf.TCPAsk{Tid: a.Tid, Fd: a.Fd, Ino: a.Ino}]
		a.Sk, a.Socket = 0, 0
		if ok {
			a.Sk, a.Socket = a.Ino+1000, a.Ino+2000
		}
	}
	return nil
}

// TestTCPRowsFilledInOneBatch makes a batch of rows, some waiting on TCP sockets, and
// expects each of those to get its own socket's state, from one read of the kernel side at
// the flush, the others none; a socket the kernel side did not find gives an empty state.
// A failed read leaves the columns empty, and the next batch starts afresh. A thread's next
// ask names where its socket was found, unless it is another socket or another thread.
func TestTCPRowsFilledInOneBatch(t *testing.T) {
	r := newRig(t, Filter{})
	tcp := &fakeTCP{socks: map[bpf.TCPAsk]bpf.TCPSock{
		{Tid: 10, Fd: 3, Ino: 100}: {State: 1, SrttUs: 250, Retrans: 2, Lost: 1, Cwnd: 10, Unacked: 4, RcvQueue: 7, SndQueue: 9000},
		{Tid: 12, Fd: 5, Ino: 101}: {State: 8, Cwnd: 10},
		{Tid: 13, Fd: 7, Ino: 102}: {State: 10, RcvQueue: 3, SndQueue: 4096, Unacked: 3, Cwnd: 10},
	}, known: map[int32][2]uint64{}}
	s := r.s
	s.cfg.TCP = tcp
	wall := time.Unix(100, 0)
	// Thread tid's record is in slot tid - 10 (a seeded thread's row has none).
	s.prev = make([]snapshot, 10)
	for i := range s.prev {
		s.prev[i].tid = int32(10 + i)
	}
	add := func(tid int32, sock *procinfo.TCPSocket) {
		if sock != nil {
			s.tcpRows.rows = append(s.tcpRows.rows, len(s.rows))
			s.tcpRows.slots = append(s.tcpRows.slots, uint32(tid-10))
			s.tcpRows.socks = append(s.tcpRows.socks, *sock)
		}
		s.rows = append(s.rows, state.Sample{Tid: tid})
	}
	add(10, &procinfo.TCPSocket{Pid: 10, Tid: 10, Fd: 3, Ino: 100})
	add(11, nil)
	add(12, &procinfo.TCPSocket{Pid: 10, Tid: 12, Fd: 5, Ino: 101})
	add(13, &procinfo.TCPSocket{Pid: 10, Tid: 13, Fd: 7, Ino: 102})
	add(14, &procinfo.TCPSocket{Pid: 10, Tid: 14, Fd: 3, Ino: 999}) // the number reused since
	s.flush(wall)

	if tcp.runs != 1 || tcp.asked != 4 {
		t.Errorf("%d reads of %d asks, want 1 of 4", tcp.runs, tcp.asked)
	}
	rows := map[int32]state.TCPInfo{}
	for _, row := range r.sink.ticks[len(r.sink.ticks)-1] {
		rows[row.Tid] = row.TCP
	}
	for tid, want := range map[int32]state.TCPInfo{
		10: {State: "ESTABLISHED", SrttUs: 250, Retrans: 2, Lost: 1, Cwnd: 10, Unacked: 4, RcvQueue: 7, SndQueue: 9000},
		11: {},
		12: {State: "CLOSE_WAIT", Cwnd: 10},
		13: {State: "LISTEN", RcvQueue: 3, SndQueue: 4096, Unacked: 3, Cwnd: 10},
		14: {},
	} {
		if rows[tid] != want {
			t.Errorf("thread %d: %+v, want %+v", tid, rows[tid], want)
		}
	}
	if len(s.tcpRows.rows) != 0 || len(s.tcpRows.socks) != 0 {
		t.Errorf("the flushed batch's sockets are still asked for: %v", s.tcpRows.rows)
	}

	tcp.err = errors.New("the iterator failed")
	add(20, nil)
	add(10, &procinfo.TCPSocket{Pid: 10, Tid: 10, Fd: 3, Ino: 100})
	s.flush(wall)
	if got := r.sink.ticks[len(r.sink.ticks)-1]; len(got) != 2 || got[1].TCP != (state.TCPInfo{}) {
		t.Errorf("rows of a failed read: %+v, want two, with no TCP state", got)
	}
	tcp.err = nil
	add(10, &procinfo.TCPSocket{Pid: 10, Tid: 10, Fd: 3, Ino: 100})
	s.flush(wall)
	if got := r.sink.ticks[len(r.sink.ticks)-1]; len(got) != 1 || got[0].TCP.State != "ESTABLISHED" || tcp.asked != 6 {
		t.Errorf("the batch after a failed read: %+v after %d asks, want ESTABLISHED after 6", got, tcp.asked)
	}
	if tcp.known[10] != [2]uint64{1100, 2100} {
		t.Errorf("thread 10's socket asked for again at %v, want where it was found ([1100 2100])", tcp.known[10])
	}

	// Thread 12 now waits on another socket; thread 13's slot holds another thread.
	s.prev[3].tid = 99
	add(12, &procinfo.TCPSocket{Pid: 10, Tid: 12, Fd: 7, Ino: 102})
	add(13, &procinfo.TCPSocket{Pid: 10, Tid: 13, Fd: 7, Ino: 102})
	s.flush(wall)
	if tcp.known[12] != [2]uint64{} || tcp.known[13] != [2]uint64{} {
		t.Errorf("asked at %v for thread 12's new socket, at %v for thread 13's in a reused slot; want neither", tcp.known[12], tcp.known[13])
	}
}

// TestTCPStateNames names the kernel's TCP states as ss -ti's sock_diag path always has.
func TestTCPStateNames(t *testing.T) {
	for st, want := range map[uint8]string{1: "ESTABLISHED", 2: "SYN_SENT", 8: "CLOSE_WAIT", 7: "CLOSE", 10: "LISTEN", 99: "STATE_99"} {
		if got := tcpInfo(bpf.TCPSock{State: st}).State; got != want {
			t.Errorf("state %d: %q, want %q", st, got, want)
		}
	}
	if got := tcpInfo(bpf.TCPSock{Cwnd: 10}); got != (state.TCPInfo{}) {
		t.Errorf("a socket not found: %+v, want no state", got)
	}
}
