// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
)

// TCPAsk asks for the TCP socket open as descriptor Fd of thread Tid, whose inode is Ino
// (the one fd_target named: a descriptor closed and reused since is another socket, and
// gets no answer). TCPSockets.Read fills its Sock.
type TCPAsk = tcpsockTcTcpAsk

// TCPSock is a TCP connection as ss -ti shows it: State is the kernel's number of its state
// (include/net/tcp_states.h), 0 when the socket asked for was not found.
type TCPSock = tcpsockTcTcpSock

// ErrNoTCPSockets means the kernel cannot read sockets from a thread's descriptors: it lacks
// bpf_task_from_pid or bpf_rdonly_cast (both Linux 6.2).
var ErrNoTCPSockets = errors.New("the kernel lacks bpf_task_from_pid or bpf_rdonly_cast (Linux 6.2): TCP sockets are not read in the kernel")

// TCPSockets owns the program that reads TCP sockets by descriptor (tcpsock.bpf.c).
type TCPSockets struct {
	asks *askIterator[TCPAsk]
}

// OpenTCPSockets loads the program and makes its link; ErrNoTCPSockets on a kernel that
// lacks what it needs. On error nothing stays loaded.
func OpenTCPSockets() (*TCPSockets, error) {
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
	asks, err := openAskIterator[TCPAsk](spec, "the TCP socket reader")
	if err != nil {
		return nil, err
	}
	return &TCPSockets{asks: asks}, nil
}

// Read answers asks in place: each one's Sock is what the kernel shows of its socket now,
// or zero. A batch of up to 1,024 costs one run of the program (the asks and answers go
// through memory shared with it), which reads every socket with a few pointer loads, in
// whatever network namespace it lives.
func (s *TCPSockets) Read(asks []TCPAsk) error { return s.asks.run(asks) }

// Close frees the program, its link and map. It may be called on a nil TCPSockets.
func (s *TCPSockets) Close() error {
	if s == nil {
		return nil
	}
	return s.asks.close()
}
