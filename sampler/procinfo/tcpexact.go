// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/state"
)

// A dump costs for every socket of the namespace (some 0.75-1.5 µs each, the more the
// busier the machine), a request for one socket by its addresses some 2-3.5 µs: on a
// server with 10,000 connections and a few rows waiting on them, requests are the cheaper
// by far; with most sockets waited on, the dump. So the sockets whose addresses fd_target
// gives are asked for one by one, each once a tick, up to a budget of half the namespace's
// sockets at its last dump (at least minExact) a tick; past it, and at the next tick when
// this one needed more, the namespace is dumped.
const minExact = 16

// exactBudget is how many sockets of the namespace may be asked for one by one at a tick.
func (ns *netnsSockets) exactBudget() int { return max(minExact, ns.lastCount/2) }

// lookup is the state at tick of socket ino, whose fd_target is target: asked for by its
// addresses while the tick's budget lasts, else from the tick's dump. byIno holds the
// tick's answers either way.
func (ns *netnsSockets) lookup(ino uint64, target string, tick time.Time) state.TCPInfo {
	if ns.byIno == nil {
		ns.byIno = map[uint32]state.TCPInfo{}
	}
	if !ns.exactTick.Equal(tick) {
		dumpNow := ns.askedLast > ns.exactBudget()
		ns.exactTick, ns.askedLast, ns.exactLeft = tick, 0, ns.exactBudget()
		if dumpNow {
			ns.exactLeft = 0
		}
		if !ns.dumped.Equal(tick) {
			clear(ns.byIno) // the last tick's
		}
	}
	if info, ok := ns.byIno[uint32(ino)]; ok {
		return info // another row of the socket asked at this tick, or the tick's dump
	}
	if !ns.dumped.Equal(tick) {
		ns.askedLast++
		if ns.exactLeft > 0 {
			if id, family, ok := parseSockID(target); ok {
				ns.exactLeft--
				if info, ok := ns.exact(family, id, uint32(ino)); ok {
					ns.byIno[uint32(ino)] = info
					return info
				}
			}
		}
		ns.dumped, ns.failed = tick, false
		if err := ns.dump(); err != nil {
			ns.failed = true
		}
		ns.lastCount = len(ns.byIno)
	}
	if ns.failed {
		return state.TCPInfo{}
	}
	return ns.byIno[uint32(ino)]
}

// sockID is inet_diag_sockid: ports (big-endian), addresses, interface and cookie.
type sockID [48]byte

// parseSockID reads the addresses of an fd_target such as "tcp 10.0.0.1:5432->10.0.0.3:51234"
// or "tcp6 [::]:80" (listening: no remote) into an inet_diag_sockid and its family.
func parseSockID(target string) (sockID, uint8, bool) {
	var id sockID
	proto, addrs, ok := strings.Cut(target, " ")
	if !ok {
		return id, 0, false
	}
	family := uint8(unix.AF_INET)
	if proto == "tcp6" {
		family = unix.AF_INET6
	}
	local, remote, connected := strings.Cut(addrs, "->")
	if !putAddr(id[0:2], id[4:20], local, family) {
		return id, 0, false
	}
	if connected && !putAddr(id[2:4], id[20:36], remote, family) {
		return id, 0, false
	}
	// INET_DIAG_NOCOOKIE: the kernel checks the socket's cookie only when one is given.
	binary.NativeEndian.PutUint32(id[40:], ^uint32(0))
	binary.NativeEndian.PutUint32(id[44:], ^uint32(0))
	return id, family, true
}

// putAddr writes host:port's port (big-endian) and address, IPv4 in its first 4 bytes, IPv6
// (an IPv4 address of a tcp6 socket as its v4-mapped form) in 16.
func putAddr(port, addr []byte, hostPort string, family uint8) bool {
	host, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	binary.BigEndian.PutUint16(port, uint16(n))
	if family == unix.AF_INET {
		if !a.Is4() {
			return false
		}
		b := a.As4()
		copy(addr, b[:])
		return true
	}
	b := a.As16() // an IPv4 address comes out v4-mapped
	copy(addr, b[:])
	return true
}

// exact asks sock_diag for the one socket of id; false when it is not there or is another
// socket than ino (the addresses were reused).
func (ns *netnsSockets) exact(family uint8, id sockID, ino uint32) (state.TCPInfo, bool) {
	ns.seq++
	var req [sizeofNlMsghdr + sizeofInetDiagReq]byte
	ne := nativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], ns.seq)
	r := req[sizeofNlMsghdr:]
	r[0], r[1], r[2] = family, unix.IPPROTO_TCP, 1<<(inetDiagInfo-1)
	ne.PutUint32(r[4:], tcpStatesNoTimeWait)
	copy(r[8:], id[:])
	if err := unix.Sendto(ns.fd, req[:], 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return state.TCPInfo{}, false
	}
	if ns.buf == nil {
		ns.buf = make([]byte, 64<<10)
	}
	for {
		n, _, err := unix.Recvfrom(ns.fd, ns.buf, 0)
		if err != nil || n < sizeofNlMsghdr {
			return state.TCPInfo{}, false
		}
		b := ns.buf[:n]
		l := int(ne.Uint32(b[0:]))
		if l < sizeofNlMsghdr || l > n {
			return state.TCPInfo{}, false
		}
		if ne.Uint32(b[8:]) != ns.seq {
			continue // the rest of an earlier answer
		}
		if ne.Uint16(b[4:]) != unix.SOCK_DIAG_BY_FAMILY {
			return state.TCPInfo{}, false // NLMSG_ERROR: ENOENT, most likely
		}
		got, info, ok := parseDiagMsg(b[sizeofNlMsghdr:l])
		return info, ok && got == ino
	}
}
