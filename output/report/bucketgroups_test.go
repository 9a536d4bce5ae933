// SPDX-License-Identifier: Apache-2.0

package report

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The groups of each bucket add up to the breakdown of the whole window, and to each
// bucket's own counts: a view that sums buckets shows the numbers a report gives.
func TestBucketGroupsAddUpToTheBreakdown(t *testing.T) {
	dir := writeTicks(t, start, 150, "")
	w := Window{From: start.Add(30 * time.Second), To: start.Add(140 * time.Second)}
	by := []string{"state", "process"}
	want, err := Run(dir, Query{Window: w, By: by})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(dir, Query{Window: w, By: by, Step: time.Minute, BucketGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Ticks != want.Ticks || got.Rows != want.Rows || got.CPUUs != want.CPUUs || len(got.Groups) != 0 {
		t.Fatalf("with bucket groups: %d ticks, %d rows, %d us, %d groups; want %d, %d, %d and no groups",
			got.Ticks, got.Rows, got.CPUUs, len(got.Groups), want.Ticks, want.Rows, want.CPUUs)
	}
	sums := map[[2]string]*Group{}
	for _, b := range got.Timeline {
		var rows int64
		for _, g := range b.Groups {
			k := [2]string{g.Values[0], g.Values[1]}
			if sums[k] == nil {
				sums[k] = &Group{Values: g.Values, Count: 1}
			}
			sums[k].Rows += g.Rows
			sums[k].CPUUs += g.CPUUs
			sums[k].Inactive += g.Inactive
			rows += g.Rows
		}
		if rows != sum(b.Rows[:]) {
			t.Errorf("bucket %v: its groups hold %d rows, its states %d", b.Start, rows, sum(b.Rows[:]))
		}
	}
	var summed []Group
	for _, g := range sums {
		summed = append(summed, *g)
	}
	if !reflect.DeepEqual(sortedGroupsOf(summed), want.Groups) {
		t.Errorf("bucket groups sum to %v; the breakdown is %v", sortedGroupsOf(summed), want.Groups)
	}
	if err := (Query{Window: w, By: by, BucketGroups: true}).Validate(); err == nil {
		t.Error("BucketGroups without a step is valid")
	}
}

func sortedGroupsOf(gs []Group) []Group {
	m := map[string]*Group{}
	for i := range gs {
		m[gs[i].Values[0]+"\x00"+gs[i].Values[1]] = &gs[i]
	}
	return sortedGroups(m)
}

// Each bucket counts the active sessions' syscall_us in log2 buckets: the fixture's 1000 µs
// syscalls fall in [512, 1024) µs, bucket 10; the spinner, in no syscall, has no value.
func TestBucketHistCountsKnownValues(t *testing.T) {
	dir := writeTicks(t, start, 150, "")
	w := Window{From: start.Add(30 * time.Second), To: start.Add(140 * time.Second)}
	got, err := Run(dir, Query{Window: w, Step: time.Minute, BucketHist: "syscall_us"})
	if err != nil {
		t.Fatal(err)
	}
	bySyscall, err := Run(dir, Query{Window: w, By: []string{"syscall"}})
	if err != nil {
		t.Fatal(err)
	}
	var inSyscalls int64 // every fixture syscall has been 1000 µs in
	for _, g := range bySyscall.Groups {
		if g.Values[0] != "" {
			inSyscalls += g.Rows
		}
	}
	var counted, elsewhere int64
	for _, b := range got.Timeline {
		for i, n := range b.Hist {
			if i == 10 {
				counted += n
			} else {
				elsewhere += n
			}
		}
	}
	if counted != inSyscalls || elsewhere != 0 || counted == 0 {
		t.Errorf("bucket 10 counts %d rows and the others %d; want the %d active rows in a syscall and none", counted, elsewhere, inSyscalls)
	}
	for _, bad := range []Query{{Window: w, By: by(), BucketHist: "syscall_us"}, {Window: w, Step: time.Minute, BucketHist: "process"}} {
		if bad.Validate() == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
}

func by() []string { return []string{"state"} }

// Groups with the same sums are listed in the order of their values, as mostActive says,
// also where one value begins another or is empty.
func TestSortedGroupsInTheOrderOfMostActive(t *testing.T) {
	values := [][]string{{"a", "z"}, {"ab", ""}, {"a", ""}, {"", "x"}, {"", ""}, {"b", "a"}, {"a", "z0"}, {"a\x01", ""}}
	groups := map[string]*Group{}
	var want []Group
	for i, v := range values {
		g := &Group{Values: v, Rows: int64(i % 2), CPUUs: 5, Count: 1}
		// Keyed as lookUp keys them: each value ended by a NUL.
		groups[strings.Join(v, "\x00")+"\x00"] = g
		want = append(want, *g)
	}
	slices.SortFunc(want, mostActive)
	if got := sortedGroups(groups); !reflect.DeepEqual(got, want) {
		t.Errorf("sorted groups %v, want %v", got, want)
	}
}

// A histogram reads its values as atoi does: unknown (empty), negative and unreadable
// values are left out, and a long one counts in the last bucket.
func TestAddToHistReadsAsAtoi(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int // the bucket, -1 for none
	}{
		{"", -1}, {"0", 0}, {"1", 1}, {"3", 2}, {"1024", 11}, {"-0", 0}, {"-5", -1}, {"12a", -1}, {"+1", -1},
		{"999999999999999999", HistBuckets - 1}, {"0000000000000000001", 1}, {"99999999999999999999", -1},
	} {
		var b Bucket
		addToHist(&b, []byte(tc.v))
		var want Bucket
		if tc.want >= 0 {
			want.Hist[tc.want] = 1
		}
		if b.Hist != want.Hist {
			t.Errorf("%q counted in %v, want bucket %d", tc.v, b.Hist, tc.want)
		}
	}
}
