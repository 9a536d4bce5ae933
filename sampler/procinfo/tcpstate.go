// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/state"
)

// TCPStates tells the state of TCP sockets at a tick, by inode, as the kernel's sock_diag
// reports it (what ss -ti shows). The kernel looks a socket up by its addresses, not by
// inode: a socket is asked for by the addresses its fd_target shows, or, when a tick's rows
// wait on many of their namespace's sockets, the namespace's TCP sockets (IPv4 and IPv6)
// are dumped once and picked by inode (see netnsSockets.lookup).
type TCPStates struct {
	procRoot  string
	selfNetns uint64
	byNetns   map[uint64]*netnsSockets
	pidNetns  map[int32]uint64 // each process's namespace, read once a tick
	waits     *waitCache
	tick      time.Time // of the dumps held
	swept     time.Time
}

// netnsSockets are one network namespace's: a sock_diag socket opened in it, and the
// tick's dump.
type netnsSockets struct {
	diagConn
	dumped time.Time // the tick byIno is of; zero when not dumped at this one
	byIno  map[uint32]state.TCPInfo
	used   time.Time
	failed bool // the dump failed at this tick: not tried again until the next
	// For asking for sockets one by one (see lookup): the tick and how many may still be
	// asked for at it, how many rows asked at it, and the sockets at the last dump.
	exactTick            time.Time
	exactLeft, askedLast int
	lastCount            int
}

// NewTCPStates reads sockets of the processes under /proc at procRoot.
func NewTCPStates(procRoot string) *TCPStates {
	c := &TCPStates{procRoot: procRoot, byNetns: map[uint64]*netnsSockets{}, pidNetns: map[int32]uint64{}, waits: newWaitCache()}
	var st syscall.Stat_t
	if syscall.Stat(filepath.Join(procRoot, "thread-self", "ns", "net"), &st) == nil {
		c.selfNetns = st.Ino
	}
	return c
}

// IsTCP says whether an fd_target is a TCP socket's (see socketTables.describe).
func IsTCP(target string) bool {
	return strings.HasPrefix(target, "tcp ") || strings.HasPrefix(target, "tcp6 ")
}

// TCPSocket is the TCP socket a row's syscall waits on: descriptor Fd of thread Tid of
// process Pid, whose inode is Ino and fd_target Target.
type TCPSocket struct {
	Pid, Tid, Fd int32
	Ino          uint64
	Target       string
}

// Socket is the TCP socket a row's syscall waits on, if any: the descriptor fds named
// target, or the one a poll or epoll wait waits on (see tcpSocket). false for other rows.
func (c *TCPStates) Socket(fds *FdTargets, syscall string, args [6]uint64, pid, tid int32, sinceNs uint64, target string, tick time.Time) (TCPSocket, bool) {
	c.at(tick)
	return fds.tcpSocket(c.waits, syscall, args, pid, tid, sinceNs, target, tick)
}

// Diag is the state at tick of sock as sock_diag shows it: for kernels that cannot read
// sockets in BPF (bpf.ErrNoTCPSockets). State is "" when it cannot be told (the socket is
// gone, or its namespace cannot be entered).
func (c *TCPStates) Diag(sock TCPSocket, tick time.Time) state.TCPInfo {
	return c.socket(sock.Pid, sock.Ino, sock.Target, tick)
}

// socket is the state at tick of TCP socket ino, open in process pid, which fd_target
// names target.
func (c *TCPStates) socket(pid int32, ino uint64, target string, tick time.Time) state.TCPInfo {
	c.at(tick)
	nsPath := filepath.Join(c.procRoot, strconv.Itoa(int(pid)), "ns", "net")
	netns, ok := c.pidNetns[pid]
	if !ok {
		var st syscall.Stat_t
		if err := syscall.Stat(nsPath, &st); err != nil {
			return state.TCPInfo{}
		}
		netns = st.Ino
		c.pidNetns[pid] = netns
	}
	ns := c.byNetns[netns]
	if ns == nil {
		ns = &netnsSockets{}
		if netns == c.selfNetns {
			ns.diagConn = openDiag(diagSocket())
		} else {
			ns.diagConn = openDiag(diagSocketIn(nsPath))
		}
		c.byNetns[netns] = ns
	}
	ns.used = tick
	if ns.openErr != nil {
		return state.TCPInfo{}
	}
	return ns.lookup(ino, target, tick)
}

// at starts tick, if it is a new one: the dumps and namespaces of the previous one are
// stale.
func (c *TCPStates) at(tick time.Time) {
	if !tick.Equal(c.tick) {
		c.tick = tick
		clear(c.pidNetns)
		c.expire(tick)
	}
}

// expire closes the sockets of namespaces no row has needed for IdleProcess (gone, most
// likely: a socket held open keeps its namespace alive), at most once a minute.
func (c *TCPStates) expire(now time.Time) {
	if !SweepDue(&c.swept, now) {
		return
	}
	c.waits.expire(now)
	for ino, ns := range c.byNetns {
		if Idle(now, ns.used) {
			ns.close()
			delete(c.byNetns, ino)
		}
	}
}

// Close closes every sock_diag socket.
func (c *TCPStates) Close() {
	for ino, ns := range c.byNetns {
		ns.close()
		delete(c.byNetns, ino)
	}
}

// tcpStateNames are the kernel's names of TCP states (include/net/tcp_states.h).
var tcpStateNames = [...]string{1: "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
	"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV"}

// TCPStateName is the kernel's name of TCP state st, as the tcp_state column shows it.
func TCPStateName(st uint8) string {
	if int(st) < len(tcpStateNames) && tcpStateNames[st] != "" {
		return tcpStateNames[st]
	}
	return "STATE_" + strconv.Itoa(int(st))
}

// dump reads every TCP socket of the namespace, IPv4 then IPv6, into byIno. A family
// that fails (IPv6 turned off: no handler for it) leaves the other's sockets; the dump fails
// only when both do.
func (ns *netnsSockets) dump() error {
	if ns.byIno == nil {
		ns.byIno = map[uint32]state.TCPInfo{}
	}
	clear(ns.byIno)
	err4 := ns.dumpFamily(unix.AF_INET)
	err6 := ns.dumpFamily(unix.AF_INET6)
	if err4 != nil && err6 != nil {
		return errors.Join(err4, err6)
	}
	return nil
}

func (ns *netnsSockets) dumpFamily(family uint8) error {
	return ns.dumpSockets(family, unix.IPPROTO_TCP, 1<<(inetDiagInfo-1), tcpStatesNoTimeWait, func(msg []byte) {
		if ino, info, ok := parseDiagMsg(msg); ok {
			ns.byIno[ino] = info
		}
	})
}

// parseDiagMsg reads one inet_diag_msg and its tcp_info: the socket's inode and state.
func parseDiagMsg(msg []byte) (uint32, state.TCPInfo, bool) {
	if len(msg) < sizeofInetDiagMsg {
		return 0, state.TCPInfo{}, false
	}
	ne := nativeEndian
	info := state.TCPInfo{
		RcvQueue: int64(ne.Uint32(msg[56:])),
		SndQueue: int64(ne.Uint32(msg[60:])),
	}
	info.State = TCPStateName(msg[1])
	ino := ne.Uint32(msg[68:])
	for a := msg[sizeofInetDiagMsg:]; len(a) >= sizeofRtAttr; {
		l := int(ne.Uint16(a[0:]))
		if l < sizeofRtAttr || l > len(a) {
			break
		}
		if ne.Uint16(a[2:]) == inetDiagInfo {
			fillTCPInfo(&info, a[sizeofRtAttr:l])
		}
		a = a[min(nlmAlign(l), len(a)):]
	}
	return ino, info, true
}

// tcp_info's offsets (linux/tcp.h), stable since the struct only grows at its end.
const (
	tcpiUnacked      = 24
	tcpiLost         = 32
	tcpiRtt          = 68
	tcpiSndCwnd      = 80
	tcpiTotalRetrans = 100
)

func fillTCPInfo(info *state.TCPInfo, b []byte) {
	u32 := func(off int) int64 {
		if off+4 > len(b) {
			return 0
		}
		return int64(nativeEndian.Uint32(b[off:]))
	}
	info.SrttUs, info.Unacked, info.Lost = u32(tcpiRtt), u32(tcpiUnacked), u32(tcpiLost)
	info.Cwnd, info.Retrans = u32(tcpiSndCwnd), u32(tcpiTotalRetrans)
}

// tcpInode is the inode of descriptor fd of process pid when Target named it target, a
// TCP socket; false otherwise.
func (c *FdTargets) tcpInode(pid int32, fd uint64, target string) (uint64, bool) {
	if !IsTCP(target) {
		return 0, false
	}
	e := c.entries[fdKey{pid, int32(fd)}]
	if e == nil || e.target != target {
		return 0, false
	}
	return e.ino, true
}
