// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// tcpListen is the TCP_LISTEN state in /proc/net/tcp.
const tcpListen = 10

// socketTables describes sockets by inode, a network namespace's at a time: its TCP and
// UDP sockets from sock_diag, its unix sockets from /proc/net/unix. The tables can be long
// (every connection of the namespace), so a namespace's are read only when a socket not
// seen before turns up, at most once per tick.
//
// sock_diag leaves out TCP sockets in TIME_WAIT (and NEW_SYN_RECV), which have no inode and
// no descriptor, without formatting them: on a machine whose clients connect and
// disconnect (a database without a pooler), those are most of the namespace's TCP
// sockets, and /proc/net/tcp, which lists them all, cost the sampler a fifth of a CPU at
// 10 Hz (BENCHMARKS.md). /proc/net/tcp, tcp6, udp and udp6 remain for a namespace where
// sock_diag cannot be asked.
type socketTables struct {
	procRoot string
	byNetns  map[string]*socketTable
	// noTCP leaves TCP sockets out: the kernel side names them (FdTargets.NameTCP).
	noTCP bool
}

type socketTable struct {
	tick  uint64 // when it was read
	byIno map[uint64]string
	diag  diagConn // opened at the table's first read
}

func newSocketTables(procRoot string) *socketTables {
	return &socketTables{procRoot: procRoot, byNetns: map[string]*socketTable{}}
}

// describe names socket ino of process pid, such as "tcp 127.0.0.1:5432->127.0.0.1:40112",
// "tcp6 [::]:80" (listening) or "unix /run/mysqld/mysqld.sock"; fallback when it is not
// in its namespace's tables (netlink and other families).
func (s *socketTables) describe(pid int32, ino, tick uint64, fallback string) string {
	proc := filepath.Join(s.procRoot, strconv.Itoa(int(pid)))
	netns, err := os.Readlink(filepath.Join(proc, "ns", "net"))
	if err != nil {
		return fallback
	}
	t := s.byNetns[netns]
	if t != nil {
		if d, ok := t.byIno[ino]; ok {
			return d
		}
	}
	if t == nil {
		t = &socketTable{byIno: map[uint64]string{}}
		t.diag = openDiag(diagSocketIn(filepath.Join(proc, "ns", "net")))
		s.byNetns[netns] = t
		t.read(proc, tick, s.noTCP)
	} else if t.tick != tick {
		t.read(proc, tick, s.noTCP)
	}
	if d, ok := t.byIno[ino]; ok {
		return d
	}
	return fallback
}

// expire drops the tables of namespaces that had no new socket lately; a namespace that
// gets one is read again anyway.
func (s *socketTables) expire(tick uint64) {
	for netns, t := range s.byNetns {
		if tick-t.tick > 1000 {
			t.diag.close()
			delete(s.byNetns, netns)
		}
	}
}

// read reads the socket tables of the network namespace of process dir proc, TCP's but
// with noTCP. A table that cannot be read (no IPv6, say) just describes no socket.
func (t *socketTable) read(proc string, tick uint64, noTCP bool) {
	t.tick = tick
	clear(t.byIno)
	if t.diag.openErr != nil || t.readDiag(noTCP) != nil {
		t.readProc(proc, noTCP)
	}
	if fs, err := procfs.NewFS(proc); err == nil {
		if unix, err := fs.NetUNIX(); err == nil {
			for _, l := range unix.Rows {
				d := "unix"
				if l.Path != "" {
					d += " " + l.Path
				}
				t.byIno[l.Inode] = d
			}
		}
	}
}

// readDiag describes the namespace's TCP (but with noTCP) and UDP sockets, IPv4 and
// IPv6, from sock_diag; it fails when no TCP socket could be told (a family the kernel
// does not have, or UDP's module missing, leaves the others).
func (t *socketTable) readDiag(noTCP bool) error {
	var tcpErr error
	for _, p := range []struct {
		name     string
		family   uint8
		protocol uint8
		states   uint32
	}{
		{"tcp", unix.AF_INET, unix.IPPROTO_TCP, tcpStatesNoTimeWait},
		{"tcp6", unix.AF_INET6, unix.IPPROTO_TCP, tcpStatesNoTimeWait},
		{"udp", unix.AF_INET, unix.IPPROTO_UDP, ^uint32(0)},
		{"udp6", unix.AF_INET6, unix.IPPROTO_UDP, ^uint32(0)},
	} {
		if noTCP && p.protocol == unix.IPPROTO_TCP {
			continue
		}
		err := t.diag.dumpSockets(p.family, p.protocol, 0, p.states, func(msg []byte) {
			if ino, d, ok := describeDiagMsg(p.name, msg); ok {
				t.byIno[ino] = d
			}
		})
		if err != nil && p.protocol == unix.IPPROTO_TCP {
			tcpErr = errors.Join(tcpErr, err)
		}
	}
	if tcpErr != nil && len(t.byIno) == 0 {
		return tcpErr
	}
	return nil
}

// describeDiagMsg describes the socket of one inet_diag_msg as addIP does a line of
// /proc/net/tcp: its inode and its name.
func describeDiagMsg(proto string, msg []byte) (uint64, string, bool) {
	if len(msg) < sizeofInetDiagMsg {
		return 0, "", false
	}
	n := net.IPv4len
	if msg[0] == unix.AF_INET6 {
		n = net.IPv6len
	}
	// inet_diag_sockid at 4: the ports (big-endian), then the addresses, 16 bytes each.
	lport, rport := binary.BigEndian.Uint16(msg[4:]), binary.BigEndian.Uint16(msg[6:])
	listening := proto[:3] == "tcp" && msg[1] == tcpListen
	d := IPSocketName(proto, listening, net.IP(msg[8:8+n]), lport, net.IP(msg[24:24+n]), rport)
	return uint64(nativeEndian.Uint32(msg[68:])), d, true
}

// IPSocketName is fd_target's name of a TCP or UDP socket: proto ("tcp", "tcp6", "udp",
// "udp6"), then local->remote, or the local address alone for a listening or
// unconnected socket (no remote port).
func IPSocketName(proto string, listening bool, local net.IP, lport uint16, remote net.IP, rport uint16) string {
	d := proto + " " + net.JoinHostPort(local.String(), strconv.Itoa(int(lport)))
	if rport != 0 && !listening {
		d += "->" + net.JoinHostPort(remote.String(), strconv.Itoa(int(rport)))
	}
	return d
}

// readProc describes the namespace's TCP (but with noTCP) and UDP sockets from its
// /proc/net tables.
func (t *socketTable) readProc(proc string, noTCP bool) {
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return
	}
	if !noTCP {
		tcp, _ := fs.NetTCP()
		tcp6, _ := fs.NetTCP6()
		t.addIP("tcp", tcp)
		t.addIP("tcp6", tcp6)
	}
	// UDP tables have the TCP layout; procfs types them apart only by name.
	udp, _ := fs.NetUDP()
	udp6, _ := fs.NetUDP6()
	t.addIP("udp", procfs.NetTCP(udp))
	t.addIP("udp6", procfs.NetTCP(udp6))
}

// addIP describes each socket of a TCP or UDP table: local->remote, or just the local
// address of a listening or unconnected socket.
func (t *socketTable) addIP(proto string, lines procfs.NetTCP) {
	for _, l := range lines {
		listening := proto[:3] == "tcp" && l.St == tcpListen
		t.byIno[l.Inode] = IPSocketName(proto, listening, l.LocalAddr, uint16(l.LocalPort), l.RemAddr, uint16(l.RemPort))
	}
}
