// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFindLockHolder(t *testing.T) {
	locks := `1: POSIX  ADVISORY  WRITE 77 fd:00:1835011 0 EOF
2: FLOCK  ADVISORY  WRITE 4242 fd:00:1835011 0 EOF
2: -> FLOCK  ADVISORY  WRITE 4343 fd:00:1835011 0 EOF
3: FLOCK  ADVISORY  WRITE 5151 fd:01:1835011 0 EOF
`
	pid, ok := findLockHolder(bufio.NewScanner(strings.NewReader(locks)), 0xfd, 0, 1835011)
	if !ok || pid != 4242 {
		t.Errorf("holder = %d, %v; want the flock holder 4242, not the POSIX lock or the waiter", pid, ok)
	}
	if _, ok := findLockHolder(bufio.NewScanner(strings.NewReader(locks)), 0xfd, 0, 99); ok {
		t.Error("found a holder for an inode nobody locks")
	}
}

// The real /proc/locks names this process once it holds a directory as output does.
func TestLockHolderOfDir(t *testing.T) {
	dir := t.TempDir()
	if _, ok := lockHolder(dir); ok {
		t.Fatal("a fresh directory has a holder")
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if pid, ok := lockHolder(dir); !ok || pid != os.Getpid() {
		t.Errorf("holder = %d, %v; want this process, %d", pid, ok, os.Getpid())
	}
}
