// SPDX-License-Identifier: Apache-2.0

package top

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/threadcap/threadcap/output/report"
)

// stateMark is how the chart draws one state of report.TimelineStates: a mark of its own,
// so that the states are told apart without colour too, and a colour.
type stateMark struct {
	mark  string
	label string
	style lipgloss.Style
}

// chartStates are drawn from the bottom up, in the order of report.TimelineStates (on
// CPU, runnable, uninterruptible, asleep in a span, stopped in a span, other); the last
// two share a mark.
var chartStates = []stateMark{
	{"█", "on CPU", lipgloss.NewStyle().Foreground(lipgloss.Color("2"))},
	{"▓", "runnable", lipgloss.NewStyle().Foreground(lipgloss.Color("3"))},
	{"▒", "D state", lipgloss.NewStyle().Foreground(lipgloss.Color("1"))},
	{"░", "asleep in span", lipgloss.NewStyle().Foreground(lipgloss.Color("4"))},
	{"·", "other", lipgloss.NewStyle().Foreground(lipgloss.Color("8"))},
}

var (
	cpuLineStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("5"))
	axisStyle    = lipgloss.NewStyle().Faint(true)
)

// axisWidth is the room the chart's scale takes on its left.
const axisWidth = 7

// chartWidth is how many columns the chart has in a terminal width cells wide.
func chartWidth(width int) int { return max(width-axisWidth, 1) }

// column is one column of the chart: average active threads by chart state.
type column struct {
	states [5]float64
	ticks  int64
}

func (c column) total() float64 {
	var t float64
	for _, v := range c.states {
		t += v
	}
	return t
}

// columns places the timeline's buckets in the chart's columns: column i starts i steps
// after the step the window starts in. Columns without a tick stay empty.
func columns(tl *report.Result, w report.Window, n int) []column {
	cols := make([]column, n)
	if tl == nil || tl.Step <= 0 {
		return cols
	}
	start := w.From.Truncate(tl.Step)
	for _, b := range tl.Timeline {
		i := int(b.Start.Sub(start) / tl.Step)
		if i < 0 || i >= n || b.Ticks == 0 {
			continue
		}
		c := &cols[i]
		c.ticks = b.Ticks
		for s, rows := range b.Rows {
			c.states[min(s, len(c.states)-1)] += report.Average(rows, b.Ticks)
		}
	}
	return cols
}

// contextOf is the stretch the chart shows around the selected window, so that the
// window is seen against what came before and after: live, the last three windows'
// lengths; replaying, a window's length on either side, none of it after now.
func contextOf(w report.Window, live bool, now time.Time) report.Window {
	d := w.Duration()
	if live {
		return report.Window{From: w.To.Add(-3 * d), To: w.To}
	}
	to := w.To.Add(d)
	if to.After(now) {
		to = now
	}
	if to.Before(w.To) {
		to = w.To // a window that ends after now keeps its end
	}
	return report.Window{From: w.From.Add(-d), To: to}
}

// chart is what the chart draws: the timeline over the context, and the selected window.
type chart struct {
	tl        *report.Result
	context   report.Window
	selection report.Window
	cpus      int
}

// lines draws active threads over the context as bars stacked by state, height rows high,
// with the CPU count marked by a line across; the selected window is drawn bright, the
// rest faint, and marked on the line under them, with the legend on the last.
func (c chart) lines(width, height int) []string {
	n := chartWidth(width)
	tl, w := c.tl, c.context
	if tl != nil && tl.Step > 0 {
		// The columns the context covers, no more: the chart ends where it does.
		span := w.To.Sub(w.From.Truncate(tl.Step))
		n = min(n, int((span+tl.Step-1)/tl.Step))
	}
	cols := columns(tl, w, n)
	top := float64(c.cpus)
	for _, col := range cols {
		top = max(top, col.total())
	}
	// Each column's cells are filled bottom up; cell k (from 0) is the state whose
	// cumulative share first reaches past it.
	cells := make([][]int, n) // per column, per row from the bottom: chart state or -1
	for i, col := range cols {
		cells[i] = make([]int, height)
		var acc float64
		prev := 0
		for k := range height {
			cells[i][k] = -1
		}
		for s, v := range col.states {
			acc += v
			upto := min(int(acc/top*float64(height)+0.5), height)
			for k := prev; k < upto; k++ {
				cells[i][k] = s
			}
			prev = max(prev, upto)
		}
		if prev == 0 && col.total() > 0 {
			cells[i][0] = largest(col.states) // any active thread shows
		}
	}
	s0, s1 := c.selected(n)
	// The row the CPU count reaches: the bottom one at least, when many more threads are
	// active than there are CPUs.
	cpuRow := max(int(float64(c.cpus)/top*float64(height)+0.5)-1, 0)
	lines := make([]string, 0, height+2)
	for r := height - 1; r >= 0; r-- {
		var label string
		switch r {
		case cpuRow:
			label = fmt.Sprintf("%dcpu", c.cpus)
		case height - 1:
			label = number(top)
		case 0:
			label = "0"
		}
		var b strings.Builder
		b.WriteString(axisStyle.Render(rightTo(label, axisWidth-1) + "│"))
		// Cells alike are styled as one run: a row is a few escape sequences, not one a cell.
		var run strings.Builder
		runKind := -3
		flush := func() {
			switch {
			case runKind == -2:
				b.WriteString(cpuLineStyle.Render(run.String()))
			case runKind == -1:
				b.WriteString(run.String())
			case runKind >= 2*len(chartStates):
				b.WriteString(chartStates[runKind-2*len(chartStates)].style.Render(run.String()))
			case runKind >= 0:
				b.WriteString(chartStates[runKind].style.Faint(true).Render(run.String()))
			}
			run.Reset()
		}
		for i := range n {
			kind, mark := -1, " "
			switch s := cells[i][r]; {
			case s >= 0 && (i < s0 || i > s1):
				kind, mark = s, chartStates[s].mark // outside the selection: faint
			case s >= 0:
				kind, mark = 2*len(chartStates)+s, chartStates[s].mark
			case r == cpuRow:
				kind, mark = -2, "─"
			}
			if kind != runKind {
				flush()
				runKind = kind
			}
			run.WriteString(mark)
		}
		flush()
		lines = append(lines, b.String())
	}
	return append(lines, c.axis(n, s0, s1, width), c.legend(width))
}

// selected is the first and last column of the selected window.
func (c chart) selected(n int) (int, int) {
	if c.tl == nil || c.tl.Step <= 0 {
		return 0, n - 1
	}
	start := c.context.From.Truncate(c.tl.Step)
	s0 := int(c.selection.From.Sub(start) / c.tl.Step)
	s1 := int((c.selection.To.Sub(start) - 1) / c.tl.Step)
	return max(s0, 0), min(s1, n-1)
}

// axis is the line under the chart: the selected window marked └──┘ under its columns,
// the context's start and end at the ends when they fit beside it.
func (c chart) axis(n, s0, s1, width int) string {
	line := []rune(strings.Repeat(" ", max(n, 0)))
	for i := s0; i <= s1 && i < n; i++ {
		line[i] = '─'
	}
	if s0 < n && s1 >= 0 {
		line[s0], line[s1] = '└', '┘'
		if s0 == s1 {
			line[s0] = '│'
		}
	}
	put := func(at int, text string) {
		copy(line[at:], []rune(text))
	}
	from, to := c.context.From.Format(timeLayout), c.context.To.Format(timeLayout)
	if s0 > len(from) {
		put(0, from)
	}
	if n-1-s1 > len(to) {
		put(n-len(to), to)
	}
	if sel := " " + durationText(c.selection.Duration()) + " "; s1-s0-1 >= len([]rune(sel)) {
		put(s0+1+(s1-s0-1-len([]rune(sel)))/2, sel)
	}
	return cut(strings.Repeat(" ", axisWidth)+string(line), width)
}

// legend says what the marks stand for, and how long a column is.
func (c chart) legend(width int) string {
	var marks []string
	for _, s := range chartStates {
		marks = append(marks, s.style.Render(s.mark)+" "+s.label)
	}
	text := strings.Join(marks, "  ")
	if c.tl != nil && c.tl.Step > 0 {
		text += faintStyle.Render("  column: " + durationText(c.tl.Step))
	}
	return cut(strings.Repeat(" ", axisWidth)+text, width)
}

func largest(v [5]float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// number shows a chart scale value briefly.
func number(v float64) string {
	if v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// durationText shows a length as people say it: 1m, 1h30m, 90s is 1m30s.
func durationText(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
