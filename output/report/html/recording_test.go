// SPDX-License-Identifier: Apache-2.0

package html

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/timetravel"
)

// breakdown is what the test reads of `threadcap report --format json`.
type breakdown struct {
	Ticks      int64
	Rows       int64
	AvgThreads float64 `json:"avg_threads"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Groups     []struct {
		Values     map[string]string
		Rows       int64
		AvgThreads float64 `json:"avg_threads"`
		CPUSeconds float64 `json:"cpu_seconds"`
	}
	Other *struct {
		Rows       int64
		AvgThreads float64 `json:"avg_threads"`
		CPUSeconds float64 `json:"cpu_seconds"`
	}
}

// reportJSON runs `threadcap report` over [from, to) as a user would.
func reportJSON(t *testing.T, rec *timetravel.Recording, from, to string, args ...string) breakdown {
	t.Helper()
	args = append([]string{"report", "--dir", rec.Dir, "--format", "json", "--top", "20", "--from", from, "--to", to}, args...)
	out, err := exec.Command(rec.Bin, args...).Output()
	if err != nil {
		t.Fatalf("threadcap %v: %v", args, err)
	}
	var b breakdown
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("threadcap %v printed what is not JSON: %v\n%s", args, err, out)
	}
	return b
}

// shown is what the page's header and table show, each number as the script computed it.
type shown struct {
	Ticks, Rows int64
	Avg, CPU    float64
	Groups      []shownGroup
	Other       *shownGroup
}

type shownGroup struct {
	Value    string
	Rows     int64
	Avg, CPU float64
}

const readShown = `(() => {
	const num = (id) => Number(document.getElementById('fact-' + id).dataset.value);
	const group = (tr) => ({Value: tr.dataset.value || '', Rows: Number(tr.querySelector('.rows').dataset.value),
		Avg: Number(tr.querySelector('.avg').dataset.value), CPU: Number(tr.querySelector('.cpu').dataset.value)});
	const other = document.querySelector('#top tbody tr.other');
	return {Ticks: num('ticks'), Rows: num('rows'), Avg: num('avg'), CPU: num('cpu'),
		Groups: [...document.querySelectorAll('#top tbody tr.group')].map(group), Other: other ? group(other) : null};
})()`

// sameNumbers fails the test where the page's header and table differ from report's JSON
// grouped by col. The page divides as report does, so the numbers are equal, not close.
func sameNumbers(t *testing.T, tb *tab, want breakdown, col, when string) {
	t.Helper()
	var got shown
	tb.eval(readShown, &got)
	if got.Ticks != want.Ticks || got.Rows != want.Rows || got.Avg != want.AvgThreads || got.CPU != want.CPUSeconds {
		t.Errorf("%s, the header says %d ticks, %d rows, %v threads, %v CPU s; report says %d, %d, %v, %v",
			when, got.Ticks, got.Rows, got.Avg, got.CPU, want.Ticks, want.Rows, want.AvgThreads, want.CPUSeconds)
	}
	if len(got.Groups) != len(want.Groups) {
		t.Errorf("%s, the table has %d groups by %s, report %d: %+v", when, len(got.Groups), col, len(want.Groups), got.Groups)
		return
	}
	for i, g := range want.Groups {
		p := got.Groups[i]
		if p.Value != g.Values[col] || p.Rows != g.Rows || p.Avg != g.AvgThreads || p.CPU != g.CPUSeconds {
			t.Errorf("%s, row %d of the table is %+v; report's group is %s=%q, %d rows, %v threads, %v CPU s",
				when, i, p, col, g.Values[col], g.Rows, g.AvgThreads, g.CPUSeconds)
		}
	}
	if (got.Other == nil) != (want.Other == nil) ||
		(got.Other != nil && (got.Other.Rows != want.Other.Rows || got.Other.Avg != want.Other.AvgThreads || got.Other.CPU != want.Other.CPUSeconds)) {
		t.Errorf("%s, the table's other groups are %+v; report's %+v", when, got.Other, want.Other)
	}
	if len(want.Groups) == 0 {
		t.Errorf("%s, report has no group: the test shows nothing", when)
	}
}

// recordPage records the daemon over known workloads (timetravel.Record: spinners fighting
// for a CPU, a sleeper, a thread in D state, spans) and writes the page of a window around
// its steady state with `threadcap report --html`.
func recordPage(t *testing.T) (rec *timetravel.Recording, path, from, to string) {
	t.Helper()
	chromium(t)
	rec = timetravel.Record(t)
	from = rec.From.Add(-2 * time.Second).Format(time.RFC3339Nano)
	to = rec.To.Add(2 * time.Second).Format(time.RFC3339Nano)
	path = filepath.Join(t.TempDir(), "page.html")
	if out, err := exec.Command(rec.Bin, "report", "--dir", rec.Dir, "--from", from, "--to", to, "--html", path).CombinedOutput(); err != nil {
		t.Fatalf("threadcap report --html: %v\n%s", err, out)
	}
	return rec, path, from, to
}

// The page over a real recording shows report's numbers, for the whole window, after a
// stretch of the chart is selected with the mouse, and after a click on a group; every
// panel draws something; nothing is logged and nothing leaves the page.
func TestPageOverRecording(t *testing.T) {
	rec, path, from, to := recordPage(t)
	tb := open(t, path)
	var ms float64
	tb.eval(`threadcapPage.loadMs()`, &ms)
	t.Logf("the page (%d bytes) was drawn %.0f ms after it began loading", fileSize(t, path), ms)
	sameNumbers(t, tb, reportJSON(t, rec, from, to, "--by", "state"), "state", "over the whole window")

	// Drag across the middle of the chart's plot (its grid is 50 px from the left, 20 from
	// the right).
	var top float64
	tb.eval(`window.scrollTo(0, 0); scrollY`, &top)
	c := tb.box("#chart")
	left, width := c.X+50, c.W-70
	tb.drag(left+0.3*width, left+0.65*width, c.Y+c.H/2)
	var sel struct{ From, To string }
	tb.eval(`threadcapPage.selection()`, &sel)
	if sel.From == from && sel.To == to {
		t.Fatalf("dragging across the chart selected the whole window %s to %s", from, to)
	}
	tb.eval(`threadcapPage.renderMs()`, &ms)
	t.Logf("selected %s to %s, re-rendered in %.1f ms", sel.From, sel.To, ms)
	sameNumbers(t, tb, reportJSON(t, rec, sel.From, sel.To, "--by", "state"), "state", "after the drag")

	// A click on the first group filters on it and regroups by the next column.
	var value string
	tb.eval(`document.querySelector('#top tbody tr.group').dataset.value`, &value)
	tb.click(`#top tbody tr.group`)
	var groupBy string
	tb.eval(`threadcapPage.groupBy()`, &groupBy)
	if groupBy != "syscall" {
		t.Errorf("after a click on state %q the table is grouped by %q, not syscall", value, groupBy)
	}
	sameNumbers(t, tb, reportJSON(t, rec, sel.From, sel.To, "--where", "state="+value, "--by", "syscall"), "syscall",
		"after a click on state="+value)

	tb.eval(`threadcapPage.renderMs()`, &ms)
	t.Logf("the click re-rendered the page in %.1f ms", ms)

	// Stacking by process is one click: the chart's series are then processes.
	tb.click(`#stack-by button[data-col="process"]`)
	var series []string
	tb.eval(`echarts.getInstanceByDom(document.getElementById('chart')).getOption().series.map(s => s.name)`, &series)
	if !contains(series, timetravel.SpinnerName) || contains(series, "on_cpu") {
		t.Errorf("stacked by process, the chart's series are %q", series)
	}
	// Reset restores the whole window; the filter stays.
	tb.click(`#reset`)
	tb.eval(`threadcapPage.selection()`, &sel)
	if sel.From != from || sel.To != to {
		t.Errorf("after reset the selection is %s to %s, not the window %s to %s", sel.From, sel.To, from, to)
	}
	sameNumbers(t, tb, reportJSON(t, rec, from, to, "--where", "state="+value, "--by", "syscall"), "syscall",
		"after reset, filtered on state="+value)

	// Removing the chip removes the filter.
	tb.click(`#chips .chip button`)
	var filters []any
	tb.eval(`threadcapPage.filters()`, &filters)
	if len(filters) != 0 {
		t.Errorf("after the chip's removal the filters are %v", filters)
	}
	sameNumbers(t, tb, reportJSON(t, rec, from, to, "--by", "syscall"), "syscall", "after the chip's removal")

	img, png := tb.screenshot()
	for _, panel := range []string{"#chart", "#top", "#flame", "#heatmaps", "#threads"} {
		if !drawn(img, tb.box(panel)) {
			t.Errorf("%s drew nothing", panel)
		}
	}
	if t.Failed() {
		shot := filepath.Join(t.TempDir(), "page.png")
		os.WriteFile(shot, png, 0o644)
		t.Logf("the page is %s, its screenshot %s", path, shot)
	}
	tb.clean()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
