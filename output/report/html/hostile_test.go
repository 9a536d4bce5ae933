// SPDX-License-Identifier: Apache-2.0

package html

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/state"
)

// hostile are names a process may give itself or its threads: each would run a script if
// a page wrote it as HTML, or end the data's script element.
var hostile = []string{
	`<img src=x onerror="window.pwned=1">`,
	`</script><script>window.pwned=2</script>`,
	`<!--<script>window.pwned=3</script>`,
	`"'><svg onload=window.pwned=4>`,
	"\u2028</ScRiPt ><script>window.pwned=5</script>",
}

var first = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// writeHour writes ticks one second apart from first through output's writer, the rows of
// tick i from rowsOf, and returns the directory.
func writeHour(t *testing.T, ticks int, rowsOf func(time.Time, int) []state.Sample) string {
	t.Helper()
	dir := t.TempDir()
	var clock atomic.Int64
	clock.Store(first.UnixNano())
	l := logrus.New()
	l.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Log: logrus.NewEntry(l)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ticks {
		tick := first.Add(time.Duration(i) * time.Second)
		clock.Store(tick.UnixNano())
		if err := w.Write(tick, rowsOf(tick, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hostileRows(tick time.Time, i int) []state.Sample {
	var rows []state.Sample
	for k, name := range hostile {
		s := state.Sample{Time: tick, Pid: int32(100 + k), Tid: int32(100 + k), Process: name, Thread: name, User: name,
			State: state.Sleeping, Syscall: name, SyscallUs: 1000, SyscallCPUUs: state.Unknown, Wchan: name, Cgroup: name,
			Cmdline: name + " --flag " + name, Span: name, SpanArg: name, IODev: name, Exe: "/bin/" + name}
		// Frames are names too (a user stack's are the program's own symbols).
		s.KernelStack = &state.Stack{Hash: fmt.Sprintf("%016x", k+1), Frames: "entry_SYSCALL_64;" + name + ";schedule"}
		if k == 0 {
			s.KernelStack = nil
			s.State = state.OnCPU
			s.StateTimeUs[state.OnCPU] = 1_000_000
		}
		rows = append(rows, s)
	}
	return rows
}

// writePage renders the page for the window over dir into a file and returns its path.
func writePage(t *testing.T, dir string, w report.Window) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, dir, report.Query{Window: w}, Options{Host: "test-host", CPUs: 2}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Names from the files show as text, everywhere the page writes them, and run nothing.
func TestHostileNamesRunNothing(t *testing.T) {
	dir := writeHour(t, 30, hostileRows)
	path := writePage(t, dir, report.Window{From: first, To: first.Add(time.Minute)})
	b, _ := os.ReadFile(path)
	for _, name := range hostile {
		if bytes.Contains(b, []byte(name)) {
			t.Errorf("the page holds %q as it is, not escaped", name)
		}
	}
	if n := bytes.Count(bytes.ToLower(b), []byte("</script")); n != 3 {
		t.Errorf("the page has %d </script, want the 3 of its own elements", n)
	}

	tb := open(t, path)
	var pwned bool
	tb.eval(`window.pwned !== undefined`, &pwned)
	if pwned {
		t.Error("a hostile name ran a script")
	}
	// Each name is in the table as the text it is; then as process, after a drill-down.
	for _, col := range []string{"syscall", "process"} {
		var cells []string
		tb.eval(`document.getElementById('group-by').value = `+quote(col)+`; document.getElementById('group-by').dispatchEvent(new Event('change'));
			[...document.querySelectorAll('#top tbody tr.group')].map(tr => tr.dataset.value)`, &cells)
		for _, name := range hostile {
			if !contains(cells, name) {
				t.Errorf("by %s, the table lacks %q: %q", col, name, cells)
			}
		}
	}
	var frames []string
	tb.eval(`echarts.getInstanceByDom(document.getElementById('flame')).getOption().series[0].data.map(d => d.name)`, &frames)
	for _, name := range hostile[1:] {
		if !contains(frames, name) {
			t.Errorf("the flame graph lacks the frame %q: %q", name, frames)
		}
	}
	// Hovering the lanes, the chart stacked by process and the flame graph shows tooltips
	// holding the names, as text.
	tb.click(`#stack-by button[data-col="process"]`)
	for _, sel := range []string{"#threads", "#chart", "#flame"} {
		bx := tb.box(sel)
		x, y := bx.X+bx.W/2, bx.Y+bx.H/2
		if sel == "#flame" { // on the row of the processes
			var p []float64
			tb.eval(`echarts.getInstanceByDom(document.getElementById('flame')).convertToPixel({seriesIndex: 0}, [1, 1.5])`, &p)
			x, y = bx.X+p[0], bx.Y+p[1]
		}
		tb.hover(x, y)
		var tip string
		tb.eval(`document.querySelector(`+quote(sel)+`).innerText`, &tip)
		if !containsAny(tip, hostile) {
			t.Errorf("hovering %s shows no name as text: %q", sel, tip)
		}
	}
	tb.click(`#top tbody tr.group`)
	var chip string
	tb.eval(`document.querySelector('#chips .chip').firstChild.textContent`, &chip)
	if !strings.HasPrefix(chip, "process=") || !contains(hostile, strings.TrimPrefix(chip, "process=")) {
		t.Errorf("the filter chip reads %q", chip)
	}
	tb.eval(`window.pwned !== undefined`, &pwned)
	if pwned {
		t.Error("a hostile name ran a script")
	}
	var imgs int
	tb.eval(`document.querySelectorAll('img, svg, body script:not([type]) ~ script:not([type]) ~ script').length`, &imgs)
	if imgs != 0 {
		t.Errorf("the page holds %d elements made from names", imgs)
	}
	tb.clean()
}

// A window no file covers is a page that says so.
func TestEmptyWindowSaysSo(t *testing.T) {
	dir := writeHour(t, 5, hostileRows)
	path := writePage(t, dir, report.Window{From: first.Add(3 * time.Hour), To: first.Add(4 * time.Hour)})
	tb := open(t, path)
	var text string
	tb.eval(`document.getElementById('empty').textContent`, &text)
	if !strings.Contains(text, "No hour file covers this window") {
		t.Errorf("the empty page says %q", text)
	}
	tb.clean()

	// A directory with no recording at all is report's error, not a page.
	if err := Write(io.Discard, t.TempDir(), report.Query{Window: report.Window{From: first, To: first.Add(time.Hour)}}, Options{}); err == nil {
		t.Error("a directory without hour files made a page")
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
