// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"
)

// tcpListen is the TCP_LISTEN state in /proc/net/tcp.
const tcpListen = 10

// socketTables describes sockets by inode from the /proc/net tables of each network
// namespace. The tables can be long (every connection of the namespace), so a namespace's
// are read only when a socket not seen before turns up, at most once per tick.
type socketTables struct {
	procRoot string
	byNetns  map[string]*socketTable
}

type socketTable struct {
	tick  uint64 // when it was read
	byIno map[uint64]string
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
	if t == nil || t.tick != tick {
		t = readSocketTable(proc, tick)
		s.byNetns[netns] = t
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
			delete(s.byNetns, netns)
		}
	}
}

// readSocketTable reads the socket tables of the network namespace of process dir proc.
// A table that cannot be read (no IPv6, say) just describes no socket.
func readSocketTable(proc string, tick uint64) *socketTable {
	t := &socketTable{tick: tick, byIno: map[uint64]string{}}
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return t
	}
	// UDP tables have the TCP layout; procfs types them apart only by name.
	tcp, _ := fs.NetTCP()
	tcp6, _ := fs.NetTCP6()
	udp, _ := fs.NetUDP()
	udp6, _ := fs.NetUDP6()
	t.addIP("tcp", tcp)
	t.addIP("tcp6", tcp6)
	t.addIP("udp", procfs.NetTCP(udp))
	t.addIP("udp6", procfs.NetTCP(udp6))
	if unix, err := fs.NetUNIX(); err == nil {
		for _, l := range unix.Rows {
			d := "unix"
			if l.Path != "" {
				d += " " + l.Path
			}
			t.byIno[l.Inode] = d
		}
	}
	return t
}

// addIP describes each socket of a TCP or UDP table: local->remote, or just the local
// address of a listening or unconnected socket.
func (t *socketTable) addIP(proto string, lines procfs.NetTCP) {
	for _, l := range lines {
		d := proto + " " + net.JoinHostPort(l.LocalAddr.String(), strconv.FormatUint(l.LocalPort, 10))
		listening := proto[:3] == "tcp" && l.St == tcpListen
		if l.RemPort != 0 && !listening {
			d += "->" + net.JoinHostPort(l.RemAddr.String(), strconv.FormatUint(l.RemPort, 10))
		}
		t.byIno[l.Inode] = d
	}
}
