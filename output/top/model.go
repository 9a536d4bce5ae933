// SPDX-License-Identifier: Apache-2.0

package top

import (
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/threadcap/threadcap/output/report"
)

// What the lower part of the screen shows.
type pane int

const (
	paneTable   pane = iota
	paneStacks       // the selected group's folded stacks, most frequent first
	paneLatency      // spans' and disks' latency histograms
)

// What a prompt on the status line reads.
type prompt int

const (
	promptNone   prompt = iota
	promptSearch        // a value to find among the groups
	promptBy            // the columns to group by
)

// level is one step of the drill-down, kept to go back to.
type level struct {
	by       []string
	where    []report.Match
	selected []string // the values of the group that was selected
}

// model is the view's state. Every number it shows comes from a report.Result.
type model struct {
	cfg Config
	src source

	width, height int

	live   bool
	last   time.Duration // live: the window's length, ending now
	window report.Window // replay: the window; live: the last one asked for
	// context is what the chart shows: the window and some time around it.
	context report.Window

	by      []string
	where   []report.Match
	history []level

	gen      int  // the current question; answers to older ones are dropped
	inflight bool // an answer to gen is awaited
	lastRun  time.Time
	took     time.Duration // how long the last answer took: live refreshes wait longer when slow

	res      *report.Result // the table's
	timeline *report.Result // the chart's
	err      string         // the last failure, one line; the last good answer stays on screen
	note     string         // a passing message: no match, a filter removed

	selected, offset int
	reselectTo       []string // after going back: the group to select in the answer

	pane        pane
	detailGen   int
	detailWait  bool
	stacks      []report.FoldedStack
	latency     report.Latencies
	latencyNote string                    // why there are no spans' and disks' latencies
	syscalls    [report.HistBuckets]int64 // the group's time in syscalls so far at the ticks
	detailErr   string
	scroll      int

	help   bool // the keys are listed in place of the table
	prompt prompt
	input  string
	search string
}

type tickMsg time.Time

func newModel(cfg Config, src source) *model {
	m := &model{cfg: cfg, src: src, live: cfg.Live, last: cfg.Last, window: cfg.Window,
		by: slices.Clone(cfg.By), where: slices.Clone(cfg.Where), width: 80, height: 24}
	if m.live {
		now := cfg.Clock()
		m.window = report.Window{From: now.Add(-m.last), To: now}
	}
	return m
}

func (m *model) Init() tea.Cmd {
	return tea.Batch(m.query(), tick())
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// refreshEvery is how often live mode asks again: each second, unless an answer takes
// long (a big current hour), then five times as long as it took, so that top stays a small
// share of a CPU.
func (m *model) refreshEvery() time.Duration { return max(time.Second, 5*m.took) }

// query asks for the current window, filters and grouping, dropping any answer pending.
func (m *model) query() tea.Cmd {
	if m.live {
		now := m.cfg.Clock()
		m.window = report.Window{From: now.Add(-m.last), To: now}
	}
	m.gen++
	m.inflight = true
	m.lastRun = time.Now()
	q := report.Query{Window: m.window, By: m.by, Where: m.where}
	context := contextOf(m.window, m.live, m.cfg.Clock())
	return queryCmd(m.src, m.cfg.Explain, m.gen, q, context, chartStep(context, m.width))
}

// chartStep is the length of the chart's columns: the context over the chart's width, in
// whole seconds, rounded up so that all of it fits (one column more when it does not
// start on a step).
func chartStep(context report.Window, width int) time.Duration {
	cols := time.Duration(max(chartWidth(width)-1, 1))
	step := (context.Duration() + cols - 1) / cols
	return max((step + time.Second - 1).Truncate(time.Second), time.Second)
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.clampSelection()
		if m.timeline != nil && m.timeline.Step != chartStep(m.context, m.width) {
			return m, m.query() // the chart's columns changed width
		}
	case tickMsg:
		if m.live && !m.inflight && time.Since(m.lastRun) >= m.refreshEvery() {
			return m, tea.Batch(m.query(), tick())
		}
		return m, tick()
	case resultMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.inflight = false
		m.took = msg.took
		if msg.err != nil {
			m.err = oneLine(msg.err.Error())
			return m, nil
		}
		m.err = ""
		m.window, m.context = msg.window, msg.context
		keep := m.selectedValues()
		if m.reselectTo != nil {
			keep, m.reselectTo = m.reselectTo, nil
		}
		m.res, m.timeline = msg.breakdown, msg.timeline
		m.reselect(keep)
	case detailMsg:
		if msg.gen != m.detailGen {
			return m, nil
		}
		m.detailWait = false
		m.stacks, m.latency, m.syscalls, m.detailErr, m.latencyNote = msg.stacks, msg.latency, msg.syscalls, "", ""
		if msg.err != nil {
			m.detailErr = oneLine(msg.err.Error())
		}
		if msg.latencyErr != nil {
			m.latencyNote = oneLine(msg.latencyErr.Error())
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// selectedValues are the values of the selected group, nil when there is none or when
// the table on screen is not yet grouped as asked.
func (m *model) selectedValues() []string {
	if m.res == nil || m.selected >= len(m.res.Groups) || !slices.Equal(m.res.By, m.by) {
		return nil
	}
	return m.res.Groups[m.selected].Values
}

// reselect keeps the selection on the group of values after a refresh reordered the table.
func (m *model) reselect(values []string) {
	if values != nil && m.res != nil {
		for i, g := range m.res.Groups {
			if slices.Equal(g.Values, values) {
				m.selected = i
				break
			}
		}
	}
	m.clampSelection()
}

func (m *model) clampSelection() {
	n := 0
	if m.res != nil {
		n = len(m.res.Groups)
	}
	m.selected = min(max(m.selected, 0), max(n-1, 0))
	rows := max(m.tableRows(), 1)
	if m.selected < m.offset {
		m.offset = m.selected
	}
	if m.selected >= m.offset+rows {
		m.offset = m.selected - rows + 1
	}
	m.offset = max(min(m.offset, n-rows), 0)
}

// key acts on a key press.
func (m *model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	if key == "ctrl+c" {
		return m, tea.Quit
	}
	if m.prompt != promptNone {
		return m.promptKey(k)
	}
	m.note = ""
	switch key {
	case "q":
		return m, tea.Quit
	case "?":
		m.help = !m.help
	case "esc":
		m.pane = paneTable
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-max(m.tableRows()-1, 1))
	case "pgdown":
		m.move(max(m.tableRows()-1, 1))
	case "home":
		m.move(-1 << 30)
	case "end":
		m.move(1 << 30)
	case "enter":
		return m, m.drill()
	case "backspace":
		return m, m.back()
	case "1", "2", "3", "4", "5", "6", "7", "8", "9":
		return m, m.removeFilter(int(key[0] - '1'))
	case "/":
		m.prompt, m.input = promptSearch, ""
	case "n":
		m.find(m.search, m.selected+1)
	case "g":
		m.prompt, m.input = promptBy, ""
	case "s":
		return m, m.showStacks()
	case "l":
		return m, m.showLatency()
	case "left", "h":
		return m, m.shift(-1)
	case "right":
		return m, m.shift(1)
	case "+", "=":
		return m, m.zoom(2)
	case "-":
		return m, m.zoom(0.5)
	case "L":
		if !m.live {
			m.live, m.last = true, m.window.Duration()
			return m, m.query()
		}
	case "r":
		return m, m.query()
	}
	return m, nil
}

func (m *model) move(d int) {
	if m.pane != paneTable {
		m.scroll = max(m.scroll+d, 0)
		return
	}
	m.selected += d
	m.clampSelection()
}

// drill adds the selected group's values as filters and groups by the next columns.
func (m *model) drill() tea.Cmd {
	values := m.selectedValues()
	if values == nil || m.pane != paneTable {
		return nil
	}
	m.history = append(m.history, level{by: m.by, where: m.where, selected: values})
	where := slices.Clone(m.where)
	for i, c := range m.by {
		where = append(where, report.Match{Column: c, Value: values[i]})
	}
	m.where, m.by = where, nextBy(m.by, where)
	m.selected, m.offset = 0, 0
	return m.query()
}

// drillOrder is the order columns are grouped by as one drills down: from what threads
// wait for to who they are, then where.
var drillOrder = []string{"state", "syscall", "process", "thread", "pid", "tid", "user", "wchan",
	"fd_target", "io_dev", "span", "cgroup", "exe", "cmdline"}

// nextBy is what to group by after drilling into by's values: as many columns as before
// (one or two), the first in drillOrder that are neither filtered on nor were grouped by.
func nextBy(by []string, where []report.Match) []string {
	used := map[string]bool{}
	for _, c := range by {
		used[c] = true
	}
	for _, w := range where {
		used[w.Column] = true
	}
	var next []string
	for _, c := range drillOrder {
		if !used[c] && len(next) < min(max(len(by), 1), 2) {
			next = append(next, c)
		}
	}
	if len(next) == 0 {
		return by
	}
	return next
}

// back undoes the last drill.
func (m *model) back() tea.Cmd {
	if m.pane != paneTable {
		m.pane = paneTable
		return nil
	}
	if len(m.history) == 0 {
		m.note = "at the top: nothing to go back to"
		return nil
	}
	l := m.history[len(m.history)-1]
	m.history = m.history[:len(m.history)-1]
	m.by, m.where = l.by, l.where
	m.selected, m.offset = 0, 0
	m.reselectTo = l.selected // the group drilled into, once the answer is there
	return m.query()
}

// removeFilter drops the i-th filter, as numbered on screen.
func (m *model) removeFilter(i int) tea.Cmd {
	if i >= len(m.where) {
		return nil
	}
	m.note = "removed " + m.where[i].Column + "=" + clean(m.where[i].Value)
	m.history = append(m.history, level{by: m.by, where: m.where, selected: m.selectedValues()})
	m.where = slices.Delete(slices.Clone(m.where), i, i+1)
	return m.query()
}

// find selects the first group from index from on, wrapping, that has a value holding s.
func (m *model) find(s string, from int) {
	if s == "" || m.res == nil || len(m.res.Groups) == 0 {
		return
	}
	needle := strings.ToLower(s)
	n := len(m.res.Groups)
	for i := range n {
		j := (from + i) % n
		for _, v := range m.res.Groups[j].Values {
			if strings.Contains(strings.ToLower(v), needle) {
				m.selected = j
				m.clampSelection()
				return
			}
		}
	}
	m.note = "no group has a value holding " + clean(s)
}

// shift moves the window by half its length, back (-1) or forward (1). Moving back leaves
// live mode; forward never goes past now.
func (m *model) shift(dir int) tea.Cmd {
	d := m.window.Duration()
	w := report.Window{From: m.window.From.Add(time.Duration(dir) * d / 2), To: m.window.To.Add(time.Duration(dir) * d / 2)}
	if now := m.cfg.Clock(); w.To.After(now) {
		if m.live {
			return nil
		}
		w = report.Window{From: now.Add(-d), To: now}
	}
	m.live, m.window = false, w
	return m.query()
}

// zoom makes the window f times as long, around its middle (live: still ending now).
func (m *model) zoom(f float64) tea.Cmd {
	d := time.Duration(float64(m.window.Duration()) * f).Round(time.Second)
	d = min(max(d, 10*time.Second), 24*time.Hour)
	if m.live {
		m.last = d
		return m.query()
	}
	mid := m.window.From.Add(m.window.Duration() / 2)
	m.window = report.Window{From: mid.Add(-d / 2), To: mid.Add(d - d/2)}
	return m.query()
}

// detailQuery is the selected group's rows: the filters with its values added.
func (m *model) detailQuery() (report.Query, bool) {
	values := m.selectedValues()
	if values == nil {
		return report.Query{}, false
	}
	where := slices.Clone(m.where)
	for i, c := range m.by {
		where = append(where, report.Match{Column: c, Value: values[i]})
	}
	return report.Query{Window: m.window, Where: where}, true
}

func (m *model) showStacks() tea.Cmd {
	if m.pane == paneStacks {
		m.pane = paneTable
		return nil
	}
	q, ok := m.detailQuery()
	if !ok {
		m.note = "no group selected"
		return nil
	}
	m.pane, m.scroll, m.detailWait, m.stacks, m.detailErr = paneStacks, 0, true, nil, ""
	m.detailGen++
	return stacksCmd(m.src, m.cfg.Explain, m.detailGen, q)
}

func (m *model) showLatency() tea.Cmd {
	if m.pane == paneLatency {
		m.pane = paneTable
		return nil
	}
	q, ok := m.detailQuery()
	if !ok {
		q = report.Query{Window: m.window, Where: m.where} // no group: every row the filters keep
	}
	m.pane, m.scroll, m.detailWait, m.latency, m.detailErr = paneLatency, 0, true, report.Latencies{}, ""
	m.detailGen++
	return latencyCmd(m.src, m.cfg.Explain, m.detailGen, q)
}

// promptKey edits the status line's prompt: Enter takes it, Esc drops it.
func (m *model) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.prompt = promptNone
	case "enter":
		p := m.prompt
		m.prompt = promptNone
		if p == promptSearch {
			m.search = m.input
			m.find(m.search, m.selected)
			return m, nil
		}
		if strings.TrimSpace(m.input) == "" {
			return m, nil // nothing typed: as it was
		}
		return m, m.regroup(m.input)
	case "backspace":
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
	case "ctrl+u":
		m.input = ""
	default:
		if k.Text != "" {
			m.input += k.Text
		}
	}
	return m, nil
}

// regroup groups by the columns typed, when they are known.
func (m *model) regroup(s string) tea.Cmd {
	var by []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			by = append(by, c)
		}
	}
	q := report.Query{Window: m.window, By: by, Where: m.where}
	if err := q.Validate(); err != nil {
		m.note = oneLine(err.Error())
		return nil
	}
	m.history = append(m.history, level{by: m.by, where: m.where, selected: m.selectedValues()})
	m.by, m.selected, m.offset = by, 0, 0
	return m.query()
}
