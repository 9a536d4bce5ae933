// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// TCPAsk asks for the TCP socket open as descriptor Fd of thread Tid, whose inode is Ino
// (the one fd_target named: a descriptor closed and reused since is another socket, and
// gets no answer). TCPSockets.Read fills its Sock.
type TCPAsk = tcpsockTcTcpAsk

// TCPSock is a TCP connection as ss -ti shows it: State is the kernel's number of its state
// (include/net/tcp_states.h), 0 when the socket asked for was not found.
type TCPSock = tcpsockTcTcpSock

// MaxTCPAsks is how many asks one run of the program answers; Read runs it as many times
// as its asks need.
const MaxTCPAsks = 1024

// ErrNoTCPSockets means the kernel cannot read sockets from a thread's descriptors: it lacks
// bpf_task_from_pid or bpf_rdonly_cast (both Linux 6.2).
var ErrNoTCPSockets = errors.New("the kernel lacks bpf_task_from_pid or bpf_rdonly_cast (Linux 6.2): TCP sockets are not read in the kernel")

// TCPSockets owns the program that reads TCP sockets by descriptor (tcpsock.bpf.c), and
// its link: an iterator that, run once, answers a batch of asks.
type TCPSockets struct {
	coll *ebpf.Collection
	link *link.Iter
	mem  []byte   // the mapping of the asks array
	asks []TCPAsk // mem, as asks
}

// OpenTCPSockets loads the program and makes its link; ErrNoTCPSockets on a kernel that
// lacks what it needs. On error nothing stays loaded.
func OpenTCPSockets() (s *TCPSockets, err error) {
	ok, err := kernelHas(func(spec *btf.Spec) bool {
		return kfuncHas("bpf_task_from_pid")(spec) && kfuncHas("bpf_rdonly_cast")(spec)
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNoTCPSockets
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, explain(fmt.Errorf("raising the memlock limit: %w", err))
	}
	spec, err := loadTcpsock()
	if err != nil {
		return nil, err
	}
	spec.Maps[tcpsockMapTcpAsks].MaxEntries = MaxTCPAsks
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, explain(fmt.Errorf("loading the TCP socket reader: %w", err))
	}
	s = &TCPSockets{coll: coll}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	asks := coll.Maps[tcpsockMapTcpAsks]
	if int(asks.ValueSize()) != int(unsafe.Sizeof(TCPAsk{})) {
		return nil, fmt.Errorf("an ask is %d bytes in the kernel object but %d in Go", asks.ValueSize(), unsafe.Sizeof(TCPAsk{}))
	}
	s.mem, err = syscall.Mmap(asks.FD(), 0, MaxTCPAsks*int(unsafe.Sizeof(TCPAsk{})), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the TCP asks: %w", err)
	}
	s.asks = unsafe.Slice((*TCPAsk)(unsafe.Pointer(&s.mem[0])), MaxTCPAsks)
	s.link, err = link.AttachIter(link.IterOptions{
		Program: coll.Programs[tcpsockProgAnswerAsks], Map: coll.Maps[tcpsockMapOneBatch],
	})
	if err != nil {
		return nil, explain(fmt.Errorf("making the TCP socket reader's iterator: %w", err))
	}
	return s, nil
}

// Read answers asks in place: each one's Sock is what the kernel shows of its socket now,
// or zero. A batch costs one run of the program (the asks and answers go through memory
// shared with it), which reads every socket with a few pointer loads, in whatever network
// namespace it lives.
func (s *TCPSockets) Read(asks []TCPAsk) error {
	for len(asks) > 0 {
		n := min(len(asks), MaxTCPAsks)
		if err := s.readBatch(asks[:n]); err != nil {
			return err
		}
		asks = asks[n:]
	}
	return nil
}

func (s *TCPSockets) readBatch(asks []TCPAsk) error {
	copy(s.asks, asks)
	if err := s.coll.Variables[tcpsockVarNrAsks].Set(uint32(len(asks))); err != nil {
		return fmt.Errorf("setting the TCP asks: %w", err)
	}
	rd, err := s.link.Open()
	if err != nil {
		return fmt.Errorf("starting the TCP socket reader: %w", err)
	}
	_, err = io.Copy(io.Discard, rd)
	if err = errors.Join(err, rd.Close()); err != nil {
		return fmt.Errorf("running the TCP socket reader: %w", err)
	}
	copy(asks, s.asks)
	return nil
}

// Close frees the program, its link and map. It may be called on a nil or partly opened
// TCPSockets.
func (s *TCPSockets) Close() error {
	if s == nil {
		return nil
	}
	var err error
	if s.link != nil {
		err = s.link.Close()
		s.link = nil
	}
	if s.mem != nil {
		err = errors.Join(err, syscall.Munmap(s.mem))
		s.mem, s.asks = nil, nil
	}
	if s.coll != nil {
		s.coll.Close()
		s.coll = nil
	}
	return err
}
