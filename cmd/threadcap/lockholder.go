// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockHolder finds in /proc/locks the process holding the flock on dir, as another
// threadcap does on its data directory.
func lockHolder(dir string) (int, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return findLockHolder(bufio.NewScanner(f), unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// findLockHolder reads lines of /proc/locks, like
//
//	1: FLOCK  ADVISORY  WRITE 4242 fd:00:1835011 0 EOF
//
// where the device is major:minor in hex and the inode in decimal.
func findLockHolder(sc *bufio.Scanner, major, minor uint32, ino uint64) (int, bool) {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid, true
		}
	}
	return 0, false
}
