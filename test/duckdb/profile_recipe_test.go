// SPDX-License-Identifier: Apache-2.0

package duckdb_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// The profile recipe reads files of its own: a recording of seconds has no profile.
const (
	exampleProfile = "'data/threadcap_profile_*.csv*'"
	exampleStacks  = "'data/threadcap_stacks_*.csv*'"
)

// readsProfile tells the recipes of the profile files, which TestProfileRecipe runs.
func (r recipe) readsProfile() bool { return strings.Contains(r.sql, exampleProfile) }

// TestProfileRecipe runs the profile recipe on profile files the writer wrote about known
// minutes: functions by the innermost frame of their samples' stacks, the user stack's
// before the kernel's, with the CPU seconds at 99 Hz; a minute outside the window is left
// out. The view's columns are the profile files'.
func TestProfileRecipe(t *testing.T) {
	var r recipe
	for _, rc := range recipes(t) {
		if rc.readsProfile() {
			r = rc
		}
	}
	if r.sql == "" {
		t.Fatal("no recipe reads the profile files")
	}
	var want []string
	for _, c := range schema.ProfileColumns {
		want = append(want, "'"+c.Name+"':'"+c.Type+"'")
	}
	if compact := strings.Join(strings.Fields(r.sql), ""); !strings.Contains(compact, "columns={"+strings.Join(want, ",")+"}") {
		t.Errorf("recipes/%s.sql's profile view does not list schema.ProfileColumns: %s", r.name, strings.Join(want, ", "))
	}

	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 3, 10, 0, 0, time.Local)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return first }})
	if err != nil {
		t.Fatal(err)
	}
	spin := state.NewStack([]string{"main", "run", "spin"})
	read := state.NewStack([]string{"entry_SYSCALL_64", "ksys_read", "copy_to_user"})
	work := state.NewStack([]string{"worker_thread", "process_one_work"})
	row := func(m time.Time, process string, k, u *state.Stack, n uint64) state.ProfileRow {
		return state.ProfileRow{Minute: m, Pid: 10, Tid: 11, Process: process, Thread: process, KernelStack: k, UserStack: u, Samples: n, Hz: 99}
	}
	for i, rows := range [][]state.ProfileRow{
		{row(first, "app", nil, spin, 198), row(first, "app", read, spin, 99), row(first, "kworker", work, nil, 9)},
		{row(first.Add(time.Minute), "app", nil, spin, 99), row(first.Add(time.Minute), "lost", nil, nil, 3)},
		{row(first.Add(5*time.Minute), "app", nil, spin, 9999)}, // after the window
	} {
		if err := w.WriteProfile(rows[0].Minute, rows); err != nil {
			t.Fatalf("minute %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sql := strings.NewReplacer(
		exampleProfile, "'"+filepath.Join(dir, "threadcap_profile_*.csv*")+"'",
		exampleStacks, "'"+filepath.Join(dir, "threadcap_stacks_*.csv*")+"'",
		exampleFrom, "'"+first.Format("2006-01-02 15:04:05-07:00")+"'",
		exampleTo, "'"+first.Add(5*time.Minute).Format("2006-01-02 15:04:05-07:00")+"'").Replace(r.sql)
	type fn struct {
		process, function string
		samples           int64
		cpuS              float64
	}
	var got []fn
	for _, row := range run(t, duckConn(t), sql) {
		got = append(got, fn{str(row["process"]), str(row["function"]), row["samples"].(int64), num(row["cpu_s"])})
	}
	wantRows := []fn{{"app", "spin", 396, 4}, {"kworker", "process_one_work", 9, 0.09}, {"lost", "[unknown]", 3, 0.03}}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("functions by CPU:\n got %v\nwant %v", got, wantRows)
	}
}
