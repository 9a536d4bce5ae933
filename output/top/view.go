// SPDX-License-Identifier: Apache-2.0

package top

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/threadcap/threadcap/output/report"
)

// The smallest terminal the view draws in; a smaller one is told so in one line.
const (
	minWidth  = 40
	minHeight = 12
)

var (
	titleStyle    = lipgloss.NewStyle().Bold(true)
	selectedStyle = lipgloss.NewStyle().Reverse(true)
	errorStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	barStyle      = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
	faintStyle    = lipgloss.NewStyle().Faint(true)
)

// chartHeight is how many rows the chart takes in a terminal height rows high.
func chartHeight(height int) int { return min(max((height-9)/3, 2), 10) }

// fixedLines are the lines around the table: three of header, the chart with its time
// axis and legend, the table's header, the status line and the keys.
func fixedLines(height int) int { return 3 + chartHeight(height) + 2 + 1 + 2 }

// tableRows is how many groups fit on screen.
func (m *model) tableRows() int { return max(m.height-fixedLines(m.height), 1) }

func (m *model) View() tea.View {
	v := tea.NewView(m.screen())
	v.AltScreen = true
	v.WindowTitle = "threadcap top"
	return v
}

// screen is the whole screen as text: every line cut to the terminal's width, so that
// none wraps, and no more lines than it has.
func (m *model) screen() string {
	if m.width < minWidth || m.height < minHeight {
		return cut(fmt.Sprintf("threadcap top needs %d×%d; this terminal is %d×%d (q quits)",
			minWidth, minHeight, m.width, m.height), m.width)
	}
	lines := []string{m.titleLine(), m.summaryLine(), m.filterLine()}
	c := chart{tl: m.timeline, context: m.context, selection: m.window, cpus: m.cfg.CPUs}
	lines = append(lines, c.lines(m.width, chartHeight(m.height))...)
	switch {
	case m.help:
		lines = append(lines, helpLines...)
	case m.pane == paneStacks:
		lines = append(lines, m.stacksLines(m.tableRows()+1)...)
	case m.pane == paneLatency:
		lines = append(lines, m.latencyLines(m.tableRows()+1)...)
	case m.res == nil && m.err != "":
		// Nothing to show yet: the whole message, which the status line cuts.
		lines = append(lines, wrap(clean(m.err), m.width)...)
	default:
		lines = append(lines, m.tableLines(m.tableRows()+1)...)
	}
	for len(lines) < m.height-2 {
		lines = append(lines, "")
	}
	lines = append(lines[:m.height-2], m.statusLine(), m.keysLine())
	for i, l := range lines {
		lines[i] = cut(l, m.width)
	}
	return strings.Join(lines, "\n")
}

const (
	dayLayout  = "2006-01-02 15:04:05"
	timeLayout = "15:04:05"
)

func (m *model) titleLine() string {
	w := m.window
	var mode, span string
	if m.live {
		mode = "LIVE"
		span = fmt.Sprintf("last %s, %s to %s", durationText(w.Duration()), w.From.Format(timeLayout), w.To.Format(timeLayout))
	} else {
		mode = "REPLAY"
		to := w.To.Format(timeLayout)
		if w.From.YearDay() != w.To.YearDay() || w.From.Year() != w.To.Year() {
			to = w.To.Format(dayLayout)
		}
		span = fmt.Sprintf("%s to %s (%s)", w.From.Format(dayLayout), to, durationText(w.Duration()))
	}
	busy := ""
	if m.inflight && !m.live { // live mode asks every second: no flicker for that
		busy = "  …"
	}
	return titleStyle.Render("threadcap top") + "  " + titleStyle.Render(mode) + "  " + span + busy
}

// summaryLine is the totals of the window and filters, as report's summary gives them.
func (m *model) summaryLine() string {
	r := m.res
	if r == nil {
		if m.err != "" {
			return "no answer yet"
		}
		return "reading the hour files…"
	}
	files := "files"
	if len(r.Files) == 1 {
		files = "file"
	}
	return fmt.Sprintf("%d ticks, %d active rows: %.2f threads on average, %.2f CPU s, %d %s",
		r.Ticks, r.Rows, report.Average(r.Rows, r.Ticks), seconds(r.CPUUs), len(r.Files), files)
}

func (m *model) filterLine() string {
	var b strings.Builder
	b.WriteString("by " + strings.Join(m.by, ","))
	if len(m.where) == 0 {
		b.WriteString("   where: every row")
		return b.String()
	}
	b.WriteString("   where")
	for i, w := range m.where {
		fmt.Fprintf(&b, " [%d] %s=%s", i+1, w.Column, clean(display(w.Value)))
	}
	return b.String()
}

func seconds(us int64) float64 { return float64(us) / 1e6 }

// display is how a value shows: an empty one (no syscall, unknown) as "-", as in report.
func display(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// Table columns after the group's values.
const (
	threadsWidth = 8
	cpuWidth     = 9
	minValue     = 6 // a value column is never cut narrower
)

// tableLines is the grouped table, rows lines in all with its header: the groups' values,
// average active threads, CPU seconds and a bar of the average.
func (m *model) tableLines(rows int) []string {
	r := m.res
	if r == nil {
		return nil
	}
	widths := make([]int, len(r.By))
	for i, c := range r.By {
		widths[i] = len(c)
		for _, g := range r.Groups {
			widths[i] = max(widths[i], width(clean(display(g.Values[i]))))
		}
	}
	// Two for the selection mark; values, numbers and a bar of at least 10.
	fitWidths(widths, m.width-2-threadsWidth-cpuWidth-4-10)
	var head strings.Builder
	head.WriteString("  ")
	for i, c := range r.By {
		head.WriteString(fitTo(strings.ToUpper(c), widths[i]) + "  ")
	}
	head.WriteString(rightTo("THREADS", threadsWidth) + " " + rightTo("CPU S", cpuWidth))
	lines := []string{titleStyle.Render(head.String())}
	if len(r.Groups) == 0 {
		return append(lines, "  no rows match in this window")
	}
	var top int64
	for _, g := range r.Groups {
		top = max(top, g.Rows)
	}
	used := 2 + threadsWidth + 1 + cpuWidth + 2
	for _, w := range widths {
		used += w + 2
	}
	barWidth := max(m.width-used, 0)
	for i := m.offset; i < len(r.Groups) && len(lines) < rows; i++ {
		g := r.Groups[i]
		var b strings.Builder
		mark := "  "
		if i == m.selected {
			mark = "> "
		}
		b.WriteString(mark)
		for j, v := range g.Values {
			b.WriteString(fitTo(clean(display(v)), widths[j]) + "  ")
		}
		b.WriteString(rightTo(strconv.FormatFloat(report.Average(g.Rows, r.Ticks), 'f', 2, 64), threadsWidth) + " " +
			rightTo(strconv.FormatFloat(seconds(g.CPUUs), 'f', 2, 64), cpuWidth) + "  ")
		line := b.String()
		bar := strings.Repeat("█", scaled(g.Rows, top, barWidth))
		if i == m.selected {
			line = selectedStyle.Render(line)
		}
		lines = append(lines, line+barStyle.Render(bar))
	}
	if more := len(r.Groups) - m.offset - (len(lines) - 1); more > 0 {
		lines[len(lines)-1] = faintStyle.Render(fmt.Sprintf("  … %d more groups (↓ PgDn)", more+1))
	}
	return lines
}

func scaled(v, top int64, w int) int {
	if top <= 0 {
		return 0
	}
	return int(float64(v)/float64(top)*float64(w) + 0.5)
}

// fitWidths narrows the widest columns until all, two cells after each, fit in room.
func fitWidths(widths []int, room int) {
	for {
		total, widest := 0, 0
		for i, w := range widths {
			total += w + 2
			if w > widths[widest] {
				widest = i
			}
		}
		if total <= room || len(widths) == 0 || widths[widest] <= minValue {
			return
		}
		widths[widest]--
	}
}

// statusLine is a prompt being typed, the last failure, a passing note, or when the
// numbers were read.
func (m *model) statusLine() string {
	switch {
	case m.prompt == promptSearch:
		return "find: " + clean(m.input) + "▏  (Enter: find, n: next, Esc: cancel)"
	case m.prompt == promptBy:
		return "group by: " + clean(m.input) + "▏  (now " + strings.Join(m.by, ",") + "; columns, comma-separated)"
	case m.err != "":
		return errorStyle.Render("error: " + clean(m.err))
	case m.note != "":
		return m.note
	case m.res != nil && len(m.res.Damaged) > 0:
		return errorStyle.Render("damaged: ") + clean(damageText(m.res.Damaged))
	case m.res != nil:
		s := fmt.Sprintf("read in %s", m.took.Round(time.Millisecond))
		if m.live {
			s += fmt.Sprintf(", every %s", durationText(m.refreshEvery()))
		}
		return faintStyle.Render(s)
	}
	return ""
}

// damageText is report's own line about the first damaged file (DamageLines), the file
// named by its base name only, and how many more there are: one line.
func damageText(damaged []report.FileDamage) string {
	line := report.DamageLines(damaged[:1])[0]
	base := filepath.Base(damaged[0].File)
	// The reason often names the file again, in full: once, by its name, is enough.
	line = strings.ReplaceAll(line, "reading "+damaged[0].File+": ", "")
	line = strings.ReplaceAll(line, damaged[0].File, base)
	if len(damaged) > 1 {
		line += fmt.Sprintf(" (and %d more files)", len(damaged)-1)
	}
	return line
}

// keys are the keys the last line lists, most needed first: as many as fit are shown.
var keys = []string{"q quit", "? keys", "⏎ drill", "⌫ back", "1-9 unfilter", "g group by", "/ find",
	"s stacks", "l latency", "←→ move", "+- zoom", "L live"}

// helpLines list every key, in place of the table while ? is on.
var helpLines = []string{
	titleStyle.Render("KEYS") + faintStyle.Render("  (? again: back to the table)"),
	"↑↓ PgUp PgDn Home End  select a group        q, Ctrl-C  quit",
	"Enter      drill in: its values become filters, grouped by the next columns",
	"Backspace  go back a step (a drill, a regroup, a filter removed)",
	"1-9        remove that filter                g  choose the columns to group by",
	"/          find a value among the groups     n  the next one",
	"s          the selected group's stacks       l  latency of spans and disks",
	"← →        move the window by half           + -  widen, narrow it",
	"L          live: the window ends now         r  read again now",
}

func (m *model) keysLine() string {
	var b strings.Builder
	for _, k := range keys {
		if width(b.String())+len(k)+1 > m.width {
			break
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k)
	}
	return faintStyle.Render(b.String())
}
