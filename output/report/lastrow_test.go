// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
)

// changingThreads is a tick of six threads that do not hold still: they are renamed, change
// state, come in another order at each tick, one is named like a formula (guarded in the
// file), tid 503 is reused by another process half way, and two have lines with quotes at
// some ticks and without at others.
func changingThreads(tick time.Time, i int) []state.Sample {
	var rows []state.Sample
	for t := range 6 {
		tid := int32(500 + t)
		s := thread(tick, 50, "app", state.Runnable, "", 10)
		s.Tid, s.Thread = tid, "w"+strconv.Itoa(t)
		if (i/5+t)%3 == 0 {
			s.Thread += "-renamed"
		}
		if (i+t)%4 == 0 {
			s.State = state.OnCPU
		}
		if t == 2 && i%2 == 0 {
			s.Thread = "-w2"
		}
		if t == 3 && i >= 75 {
			s.Pid, s.Process = 60, "other"
		}
		// A comma or a quote makes the line quoted: its fields are compared one by one,
		// the lines without quotes by runs of columns.
		if t == 4 && i%3 != 0 {
			s.Thread = "w4,x"
		}
		if t == 5 && i >= 40 && i < 100 {
			s.Process = `say "hi"`
		}
		rows = append(rows, s)
	}
	slices.Reverse(rows[:i%7])
	if i%2 == 1 {
		slices.Reverse(rows)
	}
	return rows
}

// Grouped by thread, every row goes to its own values' group, however a thread's values
// change from row to row: the groups of each bucket are the rows the test wrote, counted.
func TestGroupsByThreadFollowEveryChange(t *testing.T) {
	const ticks = 150
	dir := writeRows(t, start, ticks, changingThreads, "")
	by := []string{"tid", "pid", "process", "thread", "state"}
	want := map[time.Time]map[string]int64{}
	for i := range ticks {
		tick := start.Add(time.Duration(i) * time.Second)
		bucket := tick.Truncate(time.Minute)
		if want[bucket] == nil {
			want[bucket] = map[string]int64{}
		}
		for _, s := range changingThreads(tick, i) {
			want[bucket][fmt.Sprint(s.Tid, "/", s.Pid, "/", s.Process, "/", s.Thread, "/", s.State)]++
		}
	}
	r, err := Run(dir, Query{Window: Window{From: start, To: start.Add(time.Hour)}, By: by, Step: time.Minute, BucketGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[time.Time]map[string]int64{}
	for _, b := range r.Timeline {
		got[b.Start.UTC()] = map[string]int64{}
		for _, g := range b.Groups {
			got[b.Start.UTC()][strings.Join(g.Values, "/")] = g.Rows
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups by bucket:\n%v\nwant:\n%v", got, want)
	}
}
