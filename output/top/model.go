// SPDX-License-Identifier: Apache-2.0

package top

import (
	"slices"
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
		m.window = liveWindow(cfg.Clock(), m.last)
	}
	return m
}

// followedUpTo is the longest live window whose answers come from a report.Follower,
// which reads only the rows added since the last refresh but keeps the groups of each
// second of the window: a longer one is asked of the files anew at each refresh, less
// often the longer that takes.
const followedUpTo = 10 * time.Minute

// liveWindow is live mode's window: the last d, to the last whole second, so that each
// refresh adds whole seconds of rows to what was read.
func liveWindow(now time.Time, d time.Duration) report.Window {
	to := now.Truncate(time.Second)
	return report.Window{From: to.Add(-d), To: to}
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
		m.window = liveWindow(m.cfg.Clock(), m.last)
	}
	m.gen++
	m.inflight = true
	m.lastRun = time.Now()
	q := report.Query{Window: m.window, By: m.by, Where: m.where}
	context := contextOf(m.window, m.live, m.cfg.Clock())
	return queryCmd(m.src, m.cfg.Explain, m.gen, q, context, chartStep(context, m.width), m.live && m.last <= followedUpTo)
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
