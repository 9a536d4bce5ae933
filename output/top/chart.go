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

// chartStates are drawn from the bottom up, in the order of report.TimelineStates
// (on CPU, runnable, uninterruptible, sleeping, stopped, other); stopped and other share
// the last mark.
var chartStates = []stateMark{
	{"█", "CPU", lipgloss.NewStyle().Foreground(lipgloss.Color("2"))},
	{"▓", "runnable", lipgloss.NewStyle().Foreground(lipgloss.Color("3"))},
	{"▒", "D", lipgloss.NewStyle().Foreground(lipgloss.Color("1"))},
	{"░", "sleep", lipgloss.NewStyle().Foreground(lipgloss.Color("4"))},
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

// chartLines draws active threads over the window as bars stacked by state, height rows
// high, with the CPU count marked by a line across, and a line of times under them.
func chartLines(tl *report.Result, w report.Window, cpus, width, height int) []string {
	n := chartWidth(width)
	if tl != nil && tl.Step > 0 {
		// The columns the window covers, no more: the chart ends where the window does.
		span := w.To.Sub(w.From.Truncate(tl.Step))
		n = min(n, int((span+tl.Step-1)/tl.Step))
	}
	cols := columns(tl, w, n)
	top := float64(cpus)
	for _, c := range cols {
		top = max(top, c.total())
	}
	// Each column's cells are filled bottom up; cell k (from 0) is the state whose
	// cumulative share first reaches past it.
	cells := make([][]int, n) // per column, per row from the bottom: chart state or -1
	for i, c := range cols {
		cells[i] = make([]int, height)
		var acc float64
		prev := 0
		for k := range height {
			cells[i][k] = -1
		}
		for s, v := range c.states {
			acc += v
			upto := min(int(acc/top*float64(height)+0.5), height)
			for k := prev; k < upto; k++ {
				cells[i][k] = s
			}
			prev = max(prev, upto)
		}
		if prev == 0 && c.total() > 0 {
			cells[i][0] = largest(c.states) // any active thread shows
		}
	}
	// The row the CPU count reaches: the bottom one at least, when many more threads are
	// active than there are CPUs.
	cpuRow := max(int(float64(cpus)/top*float64(height)+0.5)-1, 0)
	lines := make([]string, 0, height+1)
	for r := height - 1; r >= 0; r-- {
		var label string
		switch r {
		case cpuRow:
			label = fmt.Sprintf("%dcpu", cpus)
		case height - 1:
			label = number(top)
		case 0:
			label = "0"
		}
		var b strings.Builder
		b.WriteString(axisStyle.Render(rightTo(label, axisWidth-1) + "│"))
		for i := range n {
			switch s := cells[i][r]; {
			case s >= 0:
				b.WriteString(chartStates[s].style.Render(chartStates[s].mark))
			case r == cpuRow:
				b.WriteString(cpuLineStyle.Render("─"))
			default:
				b.WriteString(" ")
			}
		}
		lines = append(lines, b.String())
	}
	// The times sit under the chart's ends, or further right when they need the room.
	return append(lines, timeAxis(w, tl, min(max(axisWidth+n, axisWidth+2*len(timeLayout)+2), width)))
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

// timeAxis is the line under the chart: the window's start and end, and the legend of
// the marks in between when it fits.
func timeAxis(w report.Window, tl *report.Result, cells int) string {
	layout := "15:04:05"
	from, to := w.From.Format(layout), w.To.Format(layout)
	var legend []string
	for _, s := range chartStates {
		legend = append(legend, s.style.Render(s.mark)+" "+s.label)
	}
	mid := strings.Join(legend, " ")
	if tl != nil && tl.Step > 0 {
		if with := durationText(tl.Step) + "/col  " + mid; width(with) <= cells-axisWidth-len(from)-len(to)-2 {
			mid = with
		}
	}
	room := cells - axisWidth - len(from) - len(to) - 2
	if width(mid) > room {
		mid = ""
	}
	gap := max(room-width(mid), 0)
	return strings.Repeat(" ", axisWidth) + from + " " + strings.Repeat(" ", gap/2) + mid +
		strings.Repeat(" ", gap-gap/2) + " " + to
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
