// SPDX-License-Identifier: Apache-2.0

package output

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// A minute's profile rows go to the hour's profile file, their stacks to the hour's stacks
// file once each, before any row (the stacks file may open before the samples file does);
// a second minute with the same stack adds no line to the stacks file.
func TestProfileFileAndItsStacks(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 21, 14, 10, 0, 0, time.UTC)
	cfg, clock, _ := testConfig(dir, start)
	w := newWriter(t, cfg)
	spin := state.NewStack([]string{"main", "spin"})
	sys := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_read"})
	rows := []state.ProfileRow{
		{Minute: start, Pid: 10, Tid: 11, Process: "app", Thread: "=worker", UserStack: spin, Samples: 97, Hz: 99, Span: "query"},
		{Minute: start, Pid: 10, Tid: 11, Process: "app", Thread: "=worker", KernelStack: sys, UserStack: spin, Samples: 2, Hz: 99},
		{Minute: start, Pid: 2, Tid: 2, Process: "kthreadd", Thread: "kworker/0:1", Samples: 1, Hz: 99},
	}
	if err := w.WriteProfile(start, rows); err != nil {
		t.Fatal(err)
	}
	next := start.Add(time.Minute)
	clock.Set(next)
	again := rows[0]
	again.Minute = next
	if err := w.WriteProfile(next, []state.ProfileRow{again}); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	m0, m1 := start.Local().Format(hourfile.TimeLayout), next.Local().Format(hourfile.TimeLayout)
	want := [][]string{
		{"minute", "pid", "tid", "process", "thread", "kernel_stack", "user_stack", "samples", "hz", "span"},
		{m0, "10", "11", "app", "'=worker", "", spin.Hash, "97", "99", "query"},
		{m0, "10", "11", "app", "'=worker", sys.Hash, spin.Hash, "2", "99", ""},
		{m0, "2", "2", "kthreadd", "kworker/0:1", "", "", "1", "99", ""},
		{m1, "10", "11", "app", "'=worker", "", spin.Hash, "97", "99", "query"},
	}
	if got := readCSV(t, filepath.Join(dir, "threadcap_profile_2026-11-21T14Z.csv")); !reflect.DeepEqual(got, want) {
		t.Errorf("profile file:\n got %q\nwant %q", got, want)
	}
	wantStacks := [][]string{{"hash", "frames"}, {spin.Hash, spin.Frames}, {sys.Hash, sys.Frames}}
	if got := readCSV(t, filepath.Join(dir, "threadcap_stacks_2026-11-21T14Z.csv")); !reflect.DeepEqual(got, wantStacks) {
		t.Errorf("stacks file:\n got %q\nwant %q", got, wantStacks)
	}
}
