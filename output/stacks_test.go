// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// TestStacksFilePerHour writes each stack once per hour, to that hour's stacks file, across
// an hour change and a restart in the middle of an hour; closed hours are compressed.
func TestStacksFilePerHour(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 21, 13, 20, 0, 0, time.UTC)
	cfg, clock, _ := testConfig(dir, start)
	cfg.Compress = CompressGzip
	a := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_read", "pipe_read"})
	b := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "__x64_sys_vfork", "kernel_clone"})
	c := state.NewStack([]string{"ret_from_fork", "kthread", "io_schedule"})
	user := state.NewStack([]string{"main", "vfork"})
	withStacks := func(tick time.Time, stacks ...*state.Stack) []state.Sample {
		rows := mysqlRows(tick, 100, len(stacks)+1) // the last row has no stack
		for i, s := range stacks {
			rows[i].KernelStack = s
		}
		return rows
	}
	write := func(w *Writer, minutes int, stacks ...*state.Stack) {
		t.Helper()
		tick := start.Add(time.Duration(minutes) * time.Minute)
		clock.Set(tick)
		if err := w.Write(tick, withStacks(tick, stacks...)); err != nil {
			t.Fatal(err)
		}
	}
	w := newWriter(t, cfg)
	write(w, 0, a, a, b)
	write(w, 20, a)
	write(w, 40, a, c)
	// A user stack goes to the same file, once.
	tick := start.Add(50 * time.Minute)
	clock.Set(tick)
	mixed := withStacks(tick, b)
	mixed[0].UserStack, mixed[1].UserStack = user, user
	if err := w.Write(tick, mixed); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	w = newWriter(t, cfg)
	write(w, 55, c, b)
	closed := filepath.Join(dir, "threadcap_stacks_2026-11-21T13Z.csv.gz")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(closed); err == nil {
			break
		}
	}
	closeWriter(t, w)
	for name, want := range map[string][][]string{
		"threadcap_stacks_2026-11-21T13Z.csv.gz": {{"hash", "frames"}, {a.Hash, a.Frames}, {b.Hash, b.Frames}},
		"threadcap_stacks_2026-11-21T14Z.csv": {{"hash", "frames"}, {a.Hash, a.Frames}, {c.Hash, c.Frames},
			{b.Hash, b.Frames}, {user.Hash, user.Frames}},
	} {
		got := readStacks(t, filepath.Join(dir, name))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	rows := readCSV(t, filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv"))
	col := slices.IndexFunc(schema.Columns, func(c schema.Column) bool { return c.Name == "kernel_stack" })
	if rows[1][col] != a.Hash || rows[len(rows)-1][col] != "" {
		t.Errorf("rows of 14Z show kernel stacks %q ... %q, want %s first and none last", rows[1][col], rows[len(rows)-1][col], a.Hash)
	}
}

// readStacks parses a stacks file as a user's tools would.
func readStacks(t testing.TB, path string) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(readPlain(t, path)))
	r.FieldsPerRecord = 2
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s does not parse as CSV: %v", path, err)
	}
	return records
}
