// SPDX-License-Identifier: Apache-2.0

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
)

// liveLimit is how soon live mode must show what the writer has just written.
const liveLimit = 3 * time.Second

func latecomer(name string) workload {
	return workload{pid: 201, tid: 201, process: name, thread: name, st: state.OnCPU, onCPUUs: 100000}
}

// TestTopLive: live mode shows, within 3 s, a process whose rows the writer starts
// appending to the current hour after top started.
func TestTopLive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	rec := recordLive(t, dir, time.Now)
	term := newTerminal(t, 100, 30)
	term.run(topCommandLine(t, 0, "--dir", dir, "--by", "process"))
	term.waitFor("the live view", func(s string) bool { return strings.Contains(s, "LIVE") && strings.Contains(s, "spinner") })

	rec.add(latecomer("latecomer"))
	screen := term.waitWithin("the process started after top", liveLimit, func(s string) bool {
		return strings.Contains(s, "latecomer")
	})
	t.Logf("live:\n%s", screen)
	quit(t, term, "C-c")
}

// TestTopLiveRotation: live mode goes on into the next hour's file when the writer rotates
// to it. The writer's clock and top's are both moved to just before an hour.
func TestTopLiveRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	now := time.Now()
	boundary := now.Truncate(time.Hour).Add(time.Hour)
	offset := boundary.Add(-4 * time.Second).Sub(now) // 4 s before the hour
	clock := func() time.Time { return time.Now().Add(offset) }
	rec := recordLive(t, dir, clock)
	term := newTerminal(t, 100, 30)
	term.run(topCommandLine(t, offset, "--dir", dir, "--by", "process"))
	term.waitFor("the live view", func(s string) bool { return strings.Contains(s, "LIVE") && strings.Contains(s, "spinner") })

	for clock().Before(boundary.Add(200 * time.Millisecond)) {
		time.Sleep(50 * time.Millisecond)
	}
	rec.add(latecomer("newhour")) // its rows are in the new hour's file only
	screen := term.waitWithin("the process of the new hour", liveLimit, func(s string) bool {
		return strings.Contains(s, "newhour") && strings.Contains(s, "2 files")
	})
	t.Logf("after the hour:\n%s", screen)
	want := "threadcap_samples_" + boundary.UTC().Format("2006-01-02T15Z") + ".csv"
	if files, _ := filepath.Glob(filepath.Join(dir, want)); len(files) != 1 {
		t.Errorf("the writer did not start %s", want)
	}
	quit(t, term)
}
