// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFdTargetIsCheckedNotReread names a descriptor from its /proc link, keeps the name
// while the same syscall goes on even if the link is gone, and notices another file under
// the same number once the thread is in a new syscall.
func TestFdTargetIsCheckedNotReread(t *testing.T) {
	proc, files := t.TempDir(), t.TempDir()
	fdDir := filepath.Join(proc, "10", "fd")
	os.MkdirAll(fdDir, 0o755)
	for _, name := range []string{"ibdata1", "redo.log"} {
		os.WriteFile(filepath.Join(files, name), nil, 0o644)
	}
	link := func(name string) {
		t.Helper()
		os.Remove(filepath.Join(fdDir, "7"))
		if err := os.Symlink(filepath.Join(files, name), filepath.Join(fdDir, "7")); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	c := NewFdTargets(proc)
	link("ibdata1")
	c.NextTick()
	if got := c.Target("pread64", 7, 10, 11, 1000, now); got != filepath.Join(files, "ibdata1") {
		t.Fatalf("pread64 on fd 7: %q, want the file it links to", got)
	}
	if got := c.Target("futex", 7, 10, 11, 1000, now); got != "" {
		t.Errorf("futex takes no descriptor but got %q", got)
	}
	if got := c.Target("read", 1<<40, 10, 11, 1000, now); got != "" {
		t.Errorf("an argument that is no descriptor got %q", got)
	}
	os.Remove(filepath.Join(fdDir, "7"))
	c.NextTick()
	if got := c.Target("pread64", 7, 10, 11, 1000, now); got != filepath.Join(files, "ibdata1") {
		t.Errorf("the same syscall at the next tick was looked up again: %q", got)
	}
	link("redo.log")
	c.NextTick()
	if got := c.Target("write", 7, 10, 11, 2000, now); got != filepath.Join(files, "redo.log") {
		t.Errorf("fd 7 now opens redo.log, got %q", got)
	}
	c.Exited(10)
	if len(c.entries) != 0 {
		t.Errorf("descriptors of an exited process are still cached")
	}
}

func TestSocketsAreDescribedFromTheirNamespace(t *testing.T) {
	proc := t.TempDir()
	dir := filepath.Join(proc, "10")
	os.MkdirAll(filepath.Join(dir, "net"), 0o755)
	os.MkdirAll(filepath.Join(dir, "ns"), 0o755)
	os.Symlink("net:[4026531840]", filepath.Join(dir, "ns", "net"))
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1 0000000000000000 100 0 0 10 0\n" +
		"   1: 0100007F:1538 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 101 1 0000000000000000 100 0 0 10 0\n"
	unix := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 102 /run/mysqld/mysqld.sock\n"
	os.WriteFile(filepath.Join(dir, "net", "tcp"), []byte(tcp), 0o644)
	os.WriteFile(filepath.Join(dir, "net", "unix"), []byte(unix), 0o644)
	s := newSocketTables(proc)
	for ino, want := range map[uint64]string{
		100: "tcp 127.0.0.1:8080",
		101: "tcp 127.0.0.1:5432->127.0.0.1:40000",
		102: "unix /run/mysqld/mysqld.sock",
		103: "socket:[103]",
	} {
		if got := s.describe(10, ino, 1, "socket:[103]"); got != want {
			t.Errorf("socket %d: %q, want %q", ino, got, want)
		}
	}
}
