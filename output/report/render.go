// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Output formats.
const (
	FormatTable = "table" // for people: fits a 100-column terminal
	FormatCSV   = "csv"   // for spreadsheets and scripts
	FormatJSON  = "json"  // for scripts and tests
)

// ParseFormat checks a --format flag.
func ParseFormat(s string) (string, error) {
	switch s {
	case FormatTable, FormatCSV, FormatJSON:
		return s, nil
	}
	return "", fmt.Errorf("--format %q: use table, csv or json", s)
}

// Widths a table can have, in terminal columns.
const (
	MinWidth     = 80
	MaxWidth     = 120
	DefaultWidth = 100 // when the terminal's is not known
)

// Render writes r in format. A table fits width columns, taken between MinWidth and
// MaxWidth; 0 means DefaultWidth.
func Render(w io.Writer, r *Result, format string, width int) error {
	switch format {
	case FormatCSV:
		return renderCSV(w, r)
	case FormatJSON:
		return renderJSON(w, r)
	}
	if width == 0 {
		width = DefaultWidth
	}
	width = min(max(width, MinWidth), MaxWidth)
	var b strings.Builder
	writeSummary(&b, r)
	if r.Step > 0 {
		writeTimeline(&b, r, width)
	} else {
		writeBreakdown(&b, r, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Table geometry.
const (
	minBar   = 10
	numWidth = 9 // an average or CPU seconds
)

const summaryLayout = "2006-01-02 15:04:05 -07:00"

func writeSummary(b *strings.Builder, r *Result) {
	files := "files"
	if len(r.Files) == 1 {
		files = "file"
	}
	fmt.Fprintf(b, "%s to %s (%s), %d %s\n", r.Window.From.Format(summaryLayout), r.Window.To.Format(summaryLayout),
		r.Window.Duration().Round(time.Second), len(r.Files), files)
	fmt.Fprintf(b, "%d ticks, %d active %s: %.2f threads on average, %.2f CPU seconds\n",
		r.Ticks, r.Rows, plural(r.Rows, "row", "rows"), Average(r.Rows, r.Ticks), seconds(r.CPUUs))
	if r.Inactive > 0 {
		fmt.Fprintf(b, "and %d inactive %s (asleep or stopped, in no span): in CPU seconds only\n",
			r.Inactive, plural(r.Inactive, "row", "rows"))
	}
	if r.Exited > 0 {
		fmt.Fprintf(b, "and %d %s of threads that had exited: in CPU seconds, not in threads on average\n",
			r.Exited, plural(r.Exited, "row", "rows"))
	}
	writeDamage(b, r.Damaged)
	b.WriteString("\n")
}

func seconds(us int64) float64 { return float64(us) / 1e6 }

// writeBreakdown lists the groups with their average active threads, CPU seconds and a bar
// proportional to the average.
func writeBreakdown(b *strings.Builder, r *Result, width int) {
	widths := make([]int, len(r.By))
	for i, name := range r.By {
		widths[i] = len(name)
		for _, g := range r.Groups {
			widths[i] = max(widths[i], utf8.RuneCountInString(display(g.Values[i])))
		}
	}
	fit(widths, width-2*numWidth-minBar-6)
	used := 0
	for i, name := range r.By {
		b.WriteString(pad(strings.ToUpper(name), widths[i]) + "  ")
		used += widths[i] + 2
	}
	fmt.Fprintf(b, "%*s  %*s\n", numWidth, "THREADS", numWidth, "CPU S")
	barWidth := max(width-used-2*numWidth-6, 0)
	var top int64
	for _, g := range r.Groups {
		top = max(top, g.Rows)
	}
	for _, g := range r.Groups {
		for i, v := range g.Values {
			b.WriteString(pad(display(v), widths[i]) + "  ")
		}
		fmt.Fprintf(b, "%*.2f  %*.2f  %s\n", numWidth, Average(g.Rows, r.Ticks), numWidth, seconds(g.CPUUs),
			strings.Repeat("█", scaled(float64(g.Rows), float64(top), barWidth)))
	}
	if r.Other.Count > 0 {
		label := fmt.Sprintf("(%d more groups)", r.Other.Count)
		fmt.Fprintf(b, "%-*s%*.2f  %*.2f\n", used, label, numWidth, Average(r.Other.Rows, r.Ticks),
			numWidth, seconds(r.Other.CPUUs))
	}
}

// timelineColumns are the states a table timeline shows apart; the others are summed. Each
// has its mark in the bar, and the legend under the table says what it stands for.
var timelineColumns = []struct {
	header, mark, meaning string
}{
	{"ON_CPU", "C", "on CPU"}, {"RUNNABLE", "R", "runnable"},
	{"D_STATE", "D", "uninterruptible"}, {"IN_SPAN", "S", "asleep in a span"}, {"OTHER", "o", "other"},
}

// timelineLegend says what the marks of the bar stand for.
func timelineLegend() string {
	marks := make([]string, len(timelineColumns))
	for i, c := range timelineColumns {
		marks[i] = c.mark + " " + c.meaning
	}
	return "bar: " + strings.Join(marks, ", ")
}

// writeTimeline shows, per bucket, the average active threads split by state, with a bar
// stacked by state and a legend of its marks.
func writeTimeline(b *strings.Builder, r *Result, width int) {
	layout := "15:04"
	if r.Step < time.Minute {
		layout = "15:04:05"
	}
	if r.Window.From.YearDay() != r.Window.To.Add(-time.Nanosecond).YearDay() {
		layout = "01-02 " + layout
	}
	timeWidth := len(layout)
	fmt.Fprintf(b, "%-*s  %8s", timeWidth, "TIME", "THREADS")
	for _, c := range timelineColumns {
		fmt.Fprintf(b, " %8s", c.header)
	}
	fmt.Fprintf(b, "  %8s\n", "CPU S")
	barWidth := max(width-timeWidth-2-8-9*len(timelineColumns)-10-2, 0)
	var top float64
	for _, bk := range r.Timeline {
		top = max(top, Average(sum(bk.Rows[:]), bk.Ticks))
	}
	for _, bk := range r.Timeline {
		cols := timelineCounts(bk)
		fmt.Fprintf(b, "%-*s  %8.2f", timeWidth, bk.Start.Format(layout), Average(sum(cols), bk.Ticks))
		for _, n := range cols {
			fmt.Fprintf(b, " %8.2f", Average(n, bk.Ticks))
		}
		fmt.Fprintf(b, "  %8.2f", seconds(bk.CPUUs))
		var bar strings.Builder
		var acc int64
		for i, n := range cols {
			from := scaled(Average(acc, bk.Ticks), top, barWidth)
			acc += n
			bar.WriteString(strings.Repeat(timelineColumns[i].mark, scaled(Average(acc, bk.Ticks), top, barWidth)-from))
		}
		if bar.Len() > 0 {
			b.WriteString("  " + bar.String())
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + timelineLegend() + "\n")
}

// timelineCounts folds a bucket's rows into timelineColumns.
func timelineCounts(bk Bucket) []int64 {
	cols := make([]int64, len(timelineColumns))
	// TimelineStates starts with the states shown apart, in the same order.
	copy(cols, bk.Rows[:len(cols)-1])
	cols[len(cols)-1] = sum(bk.Rows[len(cols)-1:])
	return cols
}

func sum(v []int64) int64 {
	var s int64
	for _, n := range v {
		s += n
	}
	return s
}

// scaled is v's share of top in a bar of width characters.
func scaled(v, top float64, width int) int {
	if top <= 0 {
		return 0
	}
	return int(v/top*float64(width) + 0.5)
}

// fit narrows the widest columns until all of them, two spaces after each, take at most
// room; values are then cut with an ellipsis.
func fit(widths []int, room int) {
	for {
		total, widest := 0, 0
		for i, w := range widths {
			total += w + 2
			if w > widths[widest] {
				widest = i
			}
		}
		if total <= room || widths[widest] <= 6 {
			return
		}
		widths[widest]--
	}
}

// display is how a value shows in a table: an empty one (no syscall, unknown) as "-".
func display(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// pad cuts or pads s to exactly width runes.
func pad(s string, width int) string {
	n := utf8.RuneCountInString(s)
	if n > width {
		r := []rune(s)
		return string(r[:width-1]) + "…"
	}
	return s + strings.Repeat(" ", width-n)
}
