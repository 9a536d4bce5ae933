// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threadcap/threadcap/output"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what it renders now (go test -update rewrites it):\n%s", path, got)
	}
}

// render runs q on the fixture ticks and renders the result in Paris time, width columns
// wide.
func render(t *testing.T, q Query, format string, width int) []byte {
	t.Helper()
	dir := writeTicks(t, start.Add(-90*time.Second), 180, output.CompressNone)
	q.Window = Window{From: start.Add(-90 * time.Second).In(paris), To: start.Add(90 * time.Second).In(paris)}
	r, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	r.Files = []string{"threadcap_samples_2026-11-21T13Z.csv", "threadcap_samples_2026-11-21T14Z.csv"}
	var b bytes.Buffer
	if err := Render(&b, r, format, width); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Query
	}{
		{"breakdown.golden", Query{By: []string{"state", "syscall"}}},
		{"top.golden", Query{By: []string{"process", "exe", "state"}, Top: 2}},
		{"many.golden", Query{By: []string{"pid", "process", "thread", "user", "state", "syscall", "exe"}}},
		{"timeline.golden", Query{Step: StepMinute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, render(t, tc.q, FormatTable, 0))
			for _, width := range []int{MinWidth, DefaultWidth, MaxWidth} {
				for _, line := range strings.Split(string(render(t, tc.q, FormatTable, width)), "\n") {
					if n := utf8.RuneCountInString(line); n > width {
						t.Errorf("a line is %d columns wide, more than %d: %q", n, width, line)
					}
				}
			}
		})
	}
}

func TestRenderCSV(t *testing.T) {
	// All groups: the shell's, no active session, is there with its guard.
	golden(t, "breakdown.csv", render(t, Query{By: []string{"process", "state"}}, FormatCSV, 0))
	golden(t, "timeline.csv", render(t, Query{Step: StepMinute}, FormatCSV, 0))
}

// TestRenderJSON checks the fields scripts read.
func TestRenderJSON(t *testing.T) {
	var got struct {
		Ticks      int64
		AvgThreads float64 `json:"avg_threads"`
		Groups     []struct {
			Values     map[string]string
			AvgThreads float64 `json:"avg_threads"`
			CPUSeconds float64 `json:"cpu_seconds"`
		}
		Other struct{ Groups int }
	}
	out := render(t, Query{By: []string{"process", "state"}, Top: 2}, FormatJSON, 0)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	top := got.Groups[0]
	if got.Ticks != 180 || got.AvgThreads != 2.5 || len(got.Groups) != 2 || got.Other.Groups != 2 ||
		top.Values["process"] != "spin" || top.Values["state"] != "on_cpu" || top.AvgThreads != 1 || top.CPUSeconds != 180 {
		t.Errorf("unexpected report:\n%s", out)
	}
}

// TestTimelineExplainsItsBar: every mark a timeline's bars are drawn with is explained in
// the timeline's own output.
func TestTimelineExplainsItsBar(t *testing.T) {
	out := string(render(t, Query{Step: StepMinute}, FormatTable, MinWidth))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	legend := lines[len(lines)-1]
	if !strings.HasPrefix(legend, "bar: ") {
		t.Fatalf("the timeline ends with %q, not with a legend of its bar:\n%s", legend, out)
	}
	for _, c := range timelineColumns {
		if !strings.Contains(legend, c.mark+" "+c.meaning) {
			t.Errorf("legend %q does not say that %s is %s", legend, c.mark, c.meaning)
		}
	}
	used := 0
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) != len(timelineColumns)+4 || fields[0] == "TIME" {
			continue // not a bucket with a bar
		}
		for _, mark := range fields[len(fields)-1] {
			used++
			if !strings.Contains(legend, " "+string(mark)+" ") {
				t.Errorf("the bar's mark %q is not in the legend %q", mark, legend)
			}
		}
	}
	if used == 0 {
		t.Errorf("no bar found in\n%s", out)
	}
}

// TestTimelineAcrossMidnightFits checks the widest time column, with the date, at the
// narrowest width.
func TestTimelineAcrossMidnightFits(t *testing.T) {
	midnight := time.Date(2026, 11, 22, 0, 0, 0, 0, paris)
	r := &Result{Window: Window{From: midnight.Add(-time.Second), To: midnight.Add(time.Second)}, Step: StepSecond, Ticks: 20}
	for i := range 2 {
		bk := Bucket{Start: midnight.Add(time.Duration(i-1) * time.Second), Ticks: 10, CPUUs: 9_000_000}
		bk.Rows[0], bk.Rows[1] = 10_000, 2_500
		r.Timeline = append(r.Timeline, bk)
	}
	var b bytes.Buffer
	if err := Render(&b, r, FormatTable, MinWidth); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "11-21 23:59:59") {
		t.Errorf("the timeline does not show the date of each second:\n%s", b.String())
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > MinWidth {
			t.Errorf("a line is %d columns wide, more than %d: %q", n, MinWidth, line)
		}
	}
}
