// SPDX-License-Identifier: Apache-2.0

package top

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/threadcap/threadcap/output/report"
)

// fakeSource answers every query with the same groups, and records the queries.
type fakeSource struct {
	queries []report.Query
	live    int // calls of Live
	err     error
}

var fakeFrom = time.Date(2026, 11, 21, 3, 10, 0, 0, time.UTC)

func (f *fakeSource) Run(q report.Query) (*report.Result, error) {
	f.queries = append(f.queries, q)
	if f.err != nil {
		return nil, f.err
	}
	r := &report.Result{Window: q.Window, By: q.By, Step: q.Step, Ticks: 100, Rows: 250, CPUUs: 12_500_000,
		Files: []string{"threadcap_samples_2026-11-21T03Z.csv"}}
	if q.Step > 0 {
		for t := q.Window.From.Truncate(q.Step); t.Before(q.Window.To); t = t.Add(q.Step) {
			r.Timeline = append(r.Timeline, report.Bucket{Start: t, Ticks: 10, Rows: [6]int64{10, 5, 5, 3, 1, 1}})
		}
		return r, nil
	}
	for i, v := range hostileValues {
		g := report.Group{Values: make([]string, len(q.By)), Rows: int64(100 - 10*i), CPUUs: int64(i) * 1e6, Count: 1}
		for j := range g.Values {
			g.Values[j] = v
		}
		r.Groups = append(r.Groups, g)
	}
	return r, nil
}

func (f *fakeSource) Live(q report.Query, context report.Window, step time.Duration) (breakdown, timeline *report.Result, err error) {
	f.live++
	if breakdown, err = f.Run(q); err != nil {
		return nil, nil, err
	}
	tq := q
	tq.Window, tq.By, tq.Step = context, nil, step
	timeline, err = f.Run(tq)
	return breakdown, timeline, err
}

func (f *fakeSource) Folded(q report.Query) ([]report.FoldedStack, error) {
	return []report.FoldedStack{{Frames: "mysqld;main;\x1b[2Jevil;" + strings.Repeat("deep_frame;", 30) + "io_schedule", Count: 7}}, nil
}

func (f *fakeSource) Latency(w report.Window) (report.Latencies, error) {
	l := report.Latencies{Spans: []report.SpanLatency{{Span: "query", Count: 10, WallUs: 1000}},
		Disks: []report.DiskLatency{{Disk: "sda", Op: "read", Requests: 4}}}
	l.Spans[0].WallHist[3], l.Spans[0].WallHist[9] = 4, 6
	l.Disks[0].DeviceHist[12] = 4
	return l, nil
}

// hostileValues are what groups are named in the tests: plain, empty, very long, wide
// characters, and escape sequences a terminal would obey.
var hostileValues = []string{"sleeping", "", strings.Repeat("long", 60), "数据库写入线程", "\x1b[2J\x1b]0;owned\x07", "\xff\xfe", "tab\there"}

// newTestModel is a replay model over the fake, its first answer in.
func newTestModel(t *testing.T, w, h int) (*model, *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	m := newModel(Config{By: []string{"state", "syscall"}, Window: report.Window{From: fakeFrom, To: fakeFrom.Add(5 * time.Minute)},
		CPUs: 4}.withDefaults(), src)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	run(m, m.query())
	return m, src
}

// run carries out a command and feeds its messages back, as the program would.
func run(m *model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			run(m, c)
		}
	case nil:
	default:
		_, next := m.Update(msg)
		run(m, next)
	}
}

func press(m *model, keys ...string) {
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "backspace":
			msg = tea.KeyPressMsg{Code: tea.KeyBackspace}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "left":
			msg = tea.KeyPressMsg{Code: tea.KeyLeft}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		_, cmd := m.Update(msg)
		run(m, cmd)
	}
}

// TestLiveFollows: live mode asks for a short window's answers as one that moves forward
// (a report.Follower), on whole seconds; for a long one, and in replay, it runs the query.
func TestLiveFollows(t *testing.T) {
	now := fakeFrom.Add(90*time.Minute + 1234*time.Millisecond)
	for _, c := range []struct {
		live   bool
		last   time.Duration
		follow bool
	}{{true, time.Minute, true}, {true, followedUpTo, true}, {true, time.Hour, false}, {false, time.Minute, false}} {
		src := &fakeSource{}
		m := newModel(Config{By: []string{"state"}, Live: c.live, Last: c.last, Clock: func() time.Time { return now },
			Window: report.Window{From: fakeFrom, To: fakeFrom.Add(c.last)}}.withDefaults(), src)
		run(m, m.query())
		if got := src.live > 0; got != c.follow {
			t.Errorf("live %v over %v: followed %v, want %v", c.live, c.last, got, c.follow)
		}
		if c.live && (!m.window.To.Equal(now.Truncate(time.Second)) || m.window.Duration() != c.last) {
			t.Errorf("live over %v: window %v, want the %v to %v", c.last, m.window, c.last, now.Truncate(time.Second))
		}
	}
}

// TestScreenFits: at every size, in every pane, no line is wider than the terminal and
// there are no more lines than it has rows, whatever the values hold.
func TestScreenFits(t *testing.T) {
	sizes := [][2]int{{80, 24}, {200, 60}, {40, 12}, {81, 25}, {120, 40}, {39, 11}, {20, 5}, {300, 100}}
	panes := map[string][]string{"table": nil, "stacks": {"s"}, "latency": {"l"}, "help": {"?"},
		"find": {"/", "数"}, "group by": {"g"}, "drilled": {"down", "down", "enter"}}
	for _, size := range sizes {
		for name, keys := range panes {
			m, _ := newTestModel(t, size[0], size[1])
			press(m, keys...)
			screen := m.screen()
			lines := strings.Split(screen, "\n")
			if len(lines) > size[1] {
				t.Errorf("%dx%d %s: %d lines", size[0], size[1], name, len(lines))
			}
			for i, l := range lines {
				if w := width(l); w > size[0] {
					t.Errorf("%dx%d %s: line %d is %d wide: %q", size[0], size[1], name, i+1, w, l)
				}
			}
			for _, bad := range []string{"\x1b[2J", "\x1b]0;", "\x07", "\xff", "\t"} {
				if strings.Contains(screen, bad) {
					t.Errorf("%dx%d %s: the screen holds %q from a value", size[0], size[1], name, bad)
				}
			}
		}
	}
}

// TestDrillAndBack: Enter filters on the selected group's values and regroups by the next
// columns; Backspace asks the first question again; a digit removes a filter.
func TestDrillAndBack(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	first := src.queries[len(src.queries)-2] // the breakdown; the timeline follows it
	press(m, "enter")
	q := src.queries[len(src.queries)-2]
	wantWhere := []report.Match{{Column: "state", Value: "sleeping"}, {Column: "syscall", Value: "sleeping"}}
	if !slices.Equal(q.Where, wantWhere) || !slices.Equal(q.By, []string{"process", "thread"}) {
		t.Errorf("after Enter: by %v where %v; want by [process thread] where %v", q.By, q.Where, wantWhere)
	}
	if !strings.Contains(m.screen(), "[1] state=sleeping [2] syscall=sleeping") {
		t.Errorf("the filters are not on screen:\n%s", m.screen())
	}
	press(m, "2")
	if q := src.queries[len(src.queries)-2]; !slices.Equal(q.Where, wantWhere[:1]) {
		t.Errorf("after 2: where %v, want %v", q.Where, wantWhere[:1])
	}
	press(m, "backspace", "backspace")
	if q := src.queries[len(src.queries)-2]; !slices.Equal(q.By, first.By) || len(q.Where) != 0 || q.Window != first.Window {
		t.Errorf("after going back twice: %+v, want %+v", q, first)
	}
	if !strings.Contains(m.screen(), "nothing to go back to") {
		press(m, "backspace")
		if !strings.Contains(m.screen(), "nothing to go back to") {
			t.Errorf("a third Backspace says nothing:\n%s", m.screen())
		}
	}
}

// TestWindowKeys: ← moves the window back by half, + widens it around its middle, and
// moving back leaves live mode.
func TestWindowKeys(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	press(m, "left")
	w := src.queries[len(src.queries)-2].Window
	if want := (report.Window{From: fakeFrom.Add(-150 * time.Second), To: fakeFrom.Add(150 * time.Second)}); w != want {
		t.Errorf("after ←: %v, want %v", w, want)
	}
	press(m, "+")
	w = src.queries[len(src.queries)-2].Window
	if w.Duration() != 10*time.Minute || !w.From.Add(5*time.Minute).Equal(fakeFrom) {
		t.Errorf("after +: %v", w)
	}
}

// TestSearchAndRegroup: / selects the first group holding the text; g regroups by the
// columns typed, and refuses a column that does not exist in one line.
func TestSearchAndRegroup(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	press(m, "/", "数", "enter")
	if m.selected != 3 {
		t.Errorf("find 数 selected group %d, want 3", m.selected)
	}
	press(m, "g", "p", "i", "d", "enter")
	if q := src.queries[len(src.queries)-2]; !slices.Equal(q.By, []string{"pid"}) {
		t.Errorf("after g pid: by %v", q.By)
	}
	press(m, "g")
	m.input = "nosuchcolumn"
	press(m, "enter")
	if !strings.Contains(m.statusLine(), `there is no column "nosuchcolumn"`) {
		t.Errorf("status line %q", m.statusLine())
	}
}

// TestFailureIsOneLine: an error from the engine (a file compressed away while read, a
// directory that may not be read) is one line, and the last answer stays on screen.
func TestFailureIsOneLine(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	src.err = errors.Join(errors.New("open threadcap_samples_2026-11-21T03Z.csv: no such file or directory"), errors.New("second"))
	run(m, m.query())
	screen := m.screen()
	if !strings.Contains(screen, "error: open threadcap_samples") || !strings.Contains(screen, "250 active rows") {
		t.Errorf("the screen:\n%s", screen)
	}
	if strings.Contains(m.statusLine(), "\n") {
		t.Errorf("the error is more than one line: %q", m.statusLine())
	}
	src.err = nil
	run(m, m.query())
	if strings.Contains(m.screen(), "error:") {
		t.Errorf("the error stays after a good answer:\n%s", m.screen())
	}
}

// TestChartCoversContext: the chart's columns hold the whole context, and no more, for
// windows of every length at every width; the selected window is marked under it.
func TestChartCoversContext(t *testing.T) {
	for _, w := range []int{40, 80, 200} {
		for _, d := range []time.Duration{10 * time.Second, time.Minute, 3 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour} {
			sel := report.Window{From: fakeFrom.Add(7 * time.Second), To: fakeFrom.Add(7*time.Second + d)}
			ctx := contextOf(sel, false, fakeFrom.Add(48*time.Hour))
			step := chartStep(ctx, w)
			cols := int((ctx.To.Sub(ctx.From.Truncate(step)) + step - 1) / step)
			if cols > chartWidth(w) {
				t.Errorf("width %d, window %v: step %v needs %d columns, the chart has %d", w, d, step, cols, chartWidth(w))
			}
			c := chart{tl: &report.Result{Step: step}, context: ctx, selection: sel, cpus: 2}
			lines := c.lines(w, 4)
			axis := lines[len(lines)-2]
			if !strings.Contains(axis, "└") || !strings.Contains(axis, "┘") {
				t.Errorf("width %d, window %v: the selection is not marked: %q", w, d, axis)
			}
		}
	}
}

// TestHelp: ? lists the keys in place of the table; ? again, or any other key, closes it.
func TestHelp(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "?")
	if !strings.Contains(m.screen(), "KEYS") || strings.Contains(m.screen(), "THREADS") {
		t.Errorf("? does not list the keys:\n%s", m.screen())
	}
	press(m, "down")
	if strings.Contains(m.screen(), "KEYS") || m.selected != 1 {
		t.Errorf("↓ neither closed the keys nor moved the selection (%d):\n%s", m.selected, m.screen())
	}
}

func TestNextBy(t *testing.T) {
	for _, c := range []struct {
		by    []string
		where []report.Match
		want  []string
	}{
		{[]string{"state", "syscall"}, nil, []string{"process", "thread"}},
		{[]string{"process"}, []report.Match{{Column: "state"}}, []string{"syscall"}},
		{[]string{"process", "state", "syscall"}, nil, []string{"thread", "pid"}},
	} {
		if got := nextBy(c.by, c.where); !slices.Equal(got, c.want) {
			t.Errorf("nextBy(%v, %v) = %v, want %v", c.by, c.where, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"mysqld":        "mysqld",
		"\x1b[2Jx":      `\x1b[2Jx`,
		"a\x07b":        `a\ab`,
		"\xff":          `\xff`,
		"数据库":           "数据库",
		"c1\u009bowned": `c1\u009bowned`,
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}
