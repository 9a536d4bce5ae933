// SPDX-License-Identifier: Apache-2.0

package top

import (
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/threadcap/threadcap/output/report"
)

// The keys' verbs: select, drill, go back, unfilter, find, regroup, move and zoom the
// window, and the detail panes. Each changes the question and asks it again; none
// computes a number.

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
	if m.help && key != "?" {
		m.help = false // any other key closes the list of keys, and does what it does
	}
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
	"fd_target", "io_dev", "span", "container", "unit", "cgroup", "exe", "cmdline"}

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
