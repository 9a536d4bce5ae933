// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoListeningSocketAndPrivateFiles runs threadcap with its defaults and checks what a
// security review would: no socket of its own listens on any protocol, and its directory
// and files are not readable by other users.
func TestNoListeningSocketAndPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, "--hz", "20", "--all", "--pid", strconv.Itoa(os.Getpid()), "--dir", dir)
	waitRows(t, dir, 1024)

	sockets := daemonSockets(t, d.Cmd.Process.Pid)
	listening := listeningSockets(t)
	for inode := range sockets {
		if proto, ok := listening[inode]; ok {
			t.Errorf("threadcap holds a listening %s socket (inode %s)", proto, inode)
		}
	}
	d.Stop(t)
	t.Logf("threadcap held %d sockets, none listening", len(sockets))

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("data directory mode %v, want 0750", fi.Mode().Perm())
	}
	// The samples, and the ticks file every tick writes to.
	names, _ := filepath.Glob(filepath.Join(dir, "threadcap_*"))
	if len(names) < 2 {
		t.Errorf("files %v, want the hour's samples and ticks files", names)
	}
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s has mode %v, want 0640", name, fi.Mode().Perm())
		}
	}
}

// daemonSockets is the set of socket inodes among pid's open files.
func daemonSockets(t *testing.T, pid int) map[string]bool {
	t.Helper()
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	sockets := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			sockets[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return sockets
}

// listeningSockets maps the inode of every listening socket in this network namespace to
// its protocol: TCP in state LISTEN, UDP bound (all UDP sockets in the table receive), and
// Unix sockets flagged __SO_ACCEPTCON.
func listeningSockets(t *testing.T) map[string]string {
	t.Helper()
	const tcpListen, unixAcceptCon = "0A", 0x10000
	found := map[string]string{}
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, f := range procNetTable(t, proto) {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) > 9 && (strings.HasPrefix(proto, "udp") || f[3] == tcpListen) {
				found[f[9]] = proto
			}
		}
	}
	for _, f := range procNetTable(t, "unix") {
		// Num RefCount Protocol Flags Type St Inode Path
		if len(f) > 6 {
			if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && flags&unixAcceptCon != 0 {
				found[f[6]] = "unix"
			}
		}
	}
	return found
}

// procNetTable is /proc/net/name, split into fields, without its header line.
func procNetTable(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("/proc/net/" + name)
	if os.IsNotExist(err) {
		return nil // no IPv6 in this kernel
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	s := bufio.NewScanner(f)
	s.Scan()
	for s.Scan() {
		rows = append(rows, strings.Fields(s.Text()))
	}
	return rows
}
