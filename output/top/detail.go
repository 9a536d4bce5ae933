// SPDX-License-Identifier: Apache-2.0

package top

import (
	"fmt"
	"strings"

	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/state"
)

// groupText names the selected group by its filters, for the detail panes' headings.
func (m *model) groupText() string {
	q, ok := m.detailQuery()
	if !ok {
		return ""
	}
	parts := make([]string, len(q.Where))
	for i, w := range q.Where {
		parts[i] = w.Column + "=" + clean(display(w.Value))
	}
	return strings.Join(parts, " ")
}

// stacksLines shows the selected group's folded stacks, most frequent first, as
// `report --folded` gives them, each with its rows and share and then its frames one a
// line, outermost first: rows lines in all, scrolled by ↑↓.
func (m *model) stacksLines(rows int) []string {
	lines := []string{titleStyle.Render("STACKS of "+m.groupText()) + faintStyle.Render("  (s or Esc: back)")}
	switch {
	case m.detailErr != "":
		return append(lines, wrap(errorStyle.Render("error: ")+clean(m.detailErr), m.width)...)
	case m.detailWait:
		return append(lines, "reading…")
	case len(m.stacks) == 0:
		return append(lines, wrap("no stacks: threads on CPU have none, and off CPU they are kept in the states the config asks for", m.width)...)
	}
	var total int64
	for _, s := range m.stacks {
		total += s.Count
	}
	var body []string
	for i, s := range m.stacks {
		body = append(body, titleStyle.Render(fmt.Sprintf("#%d  %d rows, %.0f%%", i+1, s.Count, 100*float64(s.Count)/float64(total))))
		for _, f := range strings.Split(s.Frames, ";") {
			body = append(body, "    "+clean(f))
		}
	}
	m.scroll = min(m.scroll, max(len(body)-(rows-1), 0))
	for _, l := range body[m.scroll:] {
		if len(lines) >= rows {
			break
		}
		lines = append(lines, l)
	}
	return lines
}

// wrap breaks s into lines of at most w cells, at spaces.
func wrap(s string, w int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && width(line)+1+width(word) > w {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// latencyLines shows latencies in the window: of the selected group's rows, how long the
// syscall in progress had run at the ticks (from the samples), and of spans and disks (from
// the spans and io files, as `report --latency`): count, p50/p90/p99 and the log2
// histogram as a sparkline. When the filters name a span or a disk, only that one.
func (m *model) latencyLines(rows int) []string {
	lines := []string{titleStyle.Render("LATENCY") + faintStyle.Render("  (log2 µs histograms; l or Esc: back)")}
	switch {
	case m.detailErr != "":
		return append(lines, wrap(clean(m.detailErr), m.width)...)
	case m.detailWait:
		return append(lines, "reading…")
	}
	q, _ := m.detailQuery()
	keep := func(col, v string) bool {
		for _, w := range q.Where {
			if w.Column == col && w.Value != v {
				return false
			}
		}
		return true
	}
	var body []string
	var hist [state.SpanBuckets]uint64
	var count int64
	for i, n := range m.syscalls {
		hist[i], count = uint64(n), count+n
	}
	body = append(body, faintStyle.Render("time so far in the syscall at the ticks, of the group's active rows:"))
	if count == 0 {
		body = append(body, "  none")
	} else {
		l := report.SpanLatency{Count: count, WallHist: hist}
		body = append(body, fmt.Sprintf("  syscalls %7d  p50 %s p90 %s p99 %s  %s", count,
			micros(l.Percentile(&l.WallHist, 0.5)), micros(l.Percentile(&l.WallHist, 0.9)),
			micros(l.Percentile(&l.WallHist, 0.99)), histogram(hist[:])))
	}
	body = append(body, faintStyle.Render("ended in the window (spans and io files):"))
	if m.latencyNote != "" {
		body = append(body, wrap("  "+clean(m.latencyNote), m.width)...)
	}
	for _, s := range m.latency.Spans {
		if !keep("span", s.Span) {
			continue
		}
		body = append(body, fmt.Sprintf("  span %-10s %7d  wall p50 %s p90 %s p99 %s  %s",
			cut(clean(s.Span), 10), s.Count, micros(s.Percentile(&s.WallHist, 0.5)),
			micros(s.Percentile(&s.WallHist, 0.9)), micros(s.Percentile(&s.WallHist, 0.99)), histogram(s.WallHist[:])))
	}
	for _, d := range m.latency.Disks {
		if !keep("io_dev", d.Disk) || !keep("io_op", d.Op) {
			continue
		}
		body = append(body, fmt.Sprintf("  disk %-6s %-5s %7d  device p50 %s p90 %s p99 %s  %s",
			cut(clean(d.Disk), 6), cut(clean(d.Op), 5), d.Requests, micros(d.Percentile(&d.DeviceHist, 0.5)),
			micros(d.Percentile(&d.DeviceHist, 0.9)), micros(d.Percentile(&d.DeviceHist, 0.99)), histogram(d.DeviceHist[:])))
	}
	m.scroll = min(m.scroll, max(len(body)-(rows-1), 0))
	for _, l := range body[m.scroll:] {
		if len(lines) >= rows {
			break
		}
		lines = append(lines, l)
	}
	return lines
}

// micros shows a bucket bound in µs briefly.
func micros(us int64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.1fs", float64(us)/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1fms", float64(us)/1e3)
	}
	return fmt.Sprintf("%dµs", us)
}

// histogram draws log2 buckets, from the first to the last one that holds anything, as a
// sparkline, with the bounds of its ends: bucket b holds [2^(b-1), 2^b) µs.
func histogram(h []uint64) string {
	first, last := -1, -1
	var top uint64
	for i, n := range h {
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
			top = max(top, n)
		}
	}
	if first < 0 {
		return ""
	}
	const levels = "▁▂▃▄▅▆▇█"
	marks := []rune(levels)
	var b strings.Builder
	for _, n := range h[first : last+1] {
		if n == 0 {
			b.WriteString(" ")
			continue
		}
		b.WriteRune(marks[min(int(float64(n)/float64(top)*float64(len(marks)-1)+0.5), len(marks)-1)])
	}
	low := int64(0)
	if first > 0 {
		low = 1 << (first - 1)
	}
	return micros(low) + " " + b.String() + " " + micros(int64(1)<<last)
}
