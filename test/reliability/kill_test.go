// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestKillDuringWriting kills threadcap with SIGKILL at random moments while it writes 20
// ticks a second, and restarts it each time: every byte of complete rows a reader could see
// before the kill is still in the file, which stays valid CSV with one header. It records
// this test's own threads (--all --pid), a row each per tick, so that the files stay small
// whatever else the machine runs.
func TestKillDuringWriting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"--hz", "20", "--all", "--pid", strconv.Itoa(os.Getpid()), "--dir", dir}
	const kills = 5
	var seen []byte // the complete rows of the current hour file, read just before a kill
	var path string
	for i := range kills {
		d := startDaemon(t, args...)
		waitRows(t, dir, int64(len(seen))+4096)
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
		names, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
		if len(names) == 0 {
			t.Fatal("no hour file")
		}
		path = names[len(names)-1]
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d.Kill()
		if i > 0 && !bytes.HasPrefix(content, seen) {
			t.Fatalf("after kill %d and a restart, rows seen before the kill are gone from %s", i, path)
		}
		seen = content[:bytes.LastIndexByte(content, '\n')+1]
	}
	d := startDaemon(t, args...)
	waitLog(t, d, "appending to existing hour file")
	waitRows(t, dir, int64(len(seen))+4096)
	d.Stop(t)
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(content, seen) {
		t.Fatalf("after the last kill and a restart, rows seen before the kill are gone from %s", path)
	}
	rows := readHours(t, dir)
	t.Logf("%d kills; %d rows, all valid, %d bytes kept from before the last kill", kills, len(rows), len(seen))
}
