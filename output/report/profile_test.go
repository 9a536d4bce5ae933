// SPDX-License-Identifier: Apache-2.0

package report

import (
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/state"
)

// TestFoldedProfile writes profile minutes across an hour change (the closed hour
// compressed) with output.Writer, and folds the window's samples: user frames, then kernel
// frames, under the process name; a filter on process keeps its samples only; a minute
// outside the window is left out; a filter on a column the profile lacks is refused.
func TestFoldedProfile(t *testing.T) {
	spin := state.NewStack([]string{"main", "spin"})
	sys := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_read"})
	worker := state.NewStack([]string{"worker_thread", "process_one_work"})
	first := start.Add(-time.Minute) // 13:59
	dir := t.TempDir()
	var clock atomic.Int64
	clock.Store(first.UnixNano())
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Compress: output.CompressGzip,
		Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m := first.Add(time.Duration(i) * time.Minute)
		clock.Store(m.UnixNano())
		rows := []state.ProfileRow{
			{Minute: m, Pid: 10, Tid: 11, Process: "=app", Thread: "w", UserStack: spin, Samples: 90, Hz: 99},
			{Minute: m, Pid: 10, Tid: 11, Process: "=app", Thread: "w", UserStack: spin, KernelStack: sys, Samples: 9, Hz: 99},
			{Minute: m, Pid: 2, Tid: 5, Process: "kworker/0:1", Thread: "kworker/0:1", KernelStack: worker, Samples: 3, Hz: 99},
			{Minute: m, Pid: 7, Tid: 7, Process: "lost", Thread: "lost", Samples: 1, Hz: 99},
		}
		if err := w.WriteProfile(m, rows); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, filepath.Join(dir, "threadcap_profile_2026-11-21T13Z.csv.gz"))
	waitFor(t, filepath.Join(dir, "threadcap_stacks_2026-11-21T13Z.csv.gz"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// 13:59 and 14:00, not 14:01.
	q := Query{Window: Window{From: first, To: first.Add(2 * time.Minute)}}
	stacks, damaged, err := FoldedProfile(dir, q)
	if err != nil || len(damaged) != 0 {
		t.Fatal(err, damaged)
	}
	want := []FoldedStack{
		{"=app;main;spin", 180},
		{"=app;main;spin;entry_SYSCALL_64;do_syscall_64;ksys_read", 18},
		{"kworker/0:1;worker_thread;process_one_work", 6},
		{"lost;[unknown]", 2},
	}
	if !reflect.DeepEqual(stacks, want) {
		t.Errorf("folded profile:\n got %v\nwant %v", stacks, want)
	}
	q.Where = []Match{{Column: "process", Value: "=app"}, {Column: "tid", Value: "11"}}
	if stacks, _, _ = FoldedProfile(dir, q); !reflect.DeepEqual(stacks, want[:2]) {
		t.Errorf("process =app, tid 11:\n got %v\nwant %v", stacks, want[:2])
	}
	q.Where = []Match{{Column: "state", Value: "on_cpu"}}
	if _, _, err := FoldedProfile(dir, q); err == nil || !strings.Contains(err.Error(), "pid, tid, process, thread, span") {
		t.Errorf("--where state: error %v, want the columns the profile is filtered by", err)
	}
	q = Query{Window: Window{From: first.Add(-24 * time.Hour), To: first.Add(-23 * time.Hour)}}
	if _, _, err := FoldedProfile(dir, q); err == nil || !strings.Contains(err.Error(), "profile.hz") {
		t.Errorf("a window without profile files: error %v, want one naming profile.hz", err)
	}
}
