// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/state"
)

// TestFoldedAcrossHours writes ticks across an hour change (the closed hour compressed)
// with output.Writer, and folds the rows that have stacks: user frames, then kernel
// frames, under the process name, counted over both hours.
func TestFoldedAcrossHours(t *testing.T) {
	kernel := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_pread64", "io_schedule"})
	user := state.NewStack([]string{"main", "do_query", "pread64"})
	first := start.Add(-2 * time.Second) // 13:59:58
	dir := t.TempDir()
	var clock atomic.Int64 // read by the writer's background work
	clock.Store(first.UnixNano())
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Compress: output.CompressGzip,
		Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		now := first.Add(time.Duration(i) * time.Second)
		clock.Store(now.UnixNano())
		db := thread(now, 300, "mysqld", state.Uninterruptible, "pread64", 2_000)
		db.KernelStack = kernel
		if i%2 == 0 {
			db.UserStack = user
		}
		if err := w.Write(now, []state.Sample{db, thread(now, 200, "-bash", state.Sleeping, "wait4", 0)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, filepath.Join(dir, "threadcap_samples_2026-11-21T13Z.csv.gz"))
	waitFor(t, filepath.Join(dir, "threadcap_stacks_2026-11-21T13Z.csv.gz"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	q := Query{Window: Window{From: first, To: first.Add(time.Hour)}}
	stacks, r, err := Folded(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	// Equal counts sort by frames.
	want := []FoldedStack{
		{"mysqld;" + kernel.Frames, 2},
		{"mysqld;" + user.Frames + ";" + kernel.Frames, 2},
	}
	// The shell asleep outside a span is no active session, but its rows match.
	if !reflect.DeepEqual(stacks, want) || r.Rows != 4 || r.Inactive != 4 {
		t.Errorf("folded %d rows (%d inactive) into %+v, want 4 (and 4) into %+v", r.Rows, r.Inactive, stacks, want)
	}
	var out bytes.Buffer
	if err := RenderFolded(&out, stacks[:1]); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want[0].Frames+" 2\n" {
		t.Errorf("rendered %q", got)
	}

	// Without the stacks of 14:00 the rows still count, under their hash.
	if err := os.Remove(filepath.Join(dir, "threadcap_stacks_2026-11-21T14Z.csv")); err != nil {
		t.Fatal(err)
	}
	q.Window.From = start
	if stacks, _, err = Folded(dir, q); err != nil {
		t.Fatal(err)
	}
	want = []FoldedStack{{"mysqld;[stack " + user.Hash + "];[stack " + kernel.Hash + "]", 1}, {"mysqld;[stack " + kernel.Hash + "]", 1}}
	if !reflect.DeepEqual(stacks, want) {
		t.Errorf("with the stacks file gone, folded %+v, want %+v", stacks, want)
	}
}
