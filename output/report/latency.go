// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// SpanLatency is what the spans of one name that ended in a window added up to, from the
// spans files: how many, their wall time and its split, and histograms of wall and on-CPU
// time.
type SpanLatency struct {
	Span   string
	Count  int64
	WallUs int64
	// PartUs splits WallUs: on CPU, runnable, sleeping, uninterruptible.
	PartUs            [4]int64
	WallHist, CPUHist [state.SpanBuckets]uint64
}

// Percentile is the upper bound, in µs, of the log2 bucket that holds the spans' p-th
// percentile (0 < p <= 1) in h: the p50 of spans of 5 to 6 ms is 8.192 ms.
func (l *SpanLatency) Percentile(h *[state.SpanBuckets]uint64, p float64) int64 {
	var below uint64
	for b, n := range h {
		below += n
		if float64(below) >= p*float64(l.Count) && below > 0 {
			return 1 << b
		}
	}
	return 0
}

// Latency reads the spans files of dir for the minutes in w, by span, the slowest (most
// wall time in all) first.
func Latency(dir string, w Window) ([]SpanLatency, error) {
	all, err := hourfile.List(dir)
	if err != nil {
		return nil, fmt.Errorf("listing spans files: %w", err)
	}
	by := map[string]*SpanLatency{}
	var malformed int64
	read := 0
	for _, f := range all {
		if f.Kind != hourfile.Spans || !f.Readable() || !f.Hour.Before(w.To) || !f.Hour.Add(time.Hour).After(w.From) {
			continue
		}
		read++
		var col map[string]int
		err := eachRecord(f.Path, &malformed, func(h [][]byte) error {
			col = map[string]int{}
			for i, name := range h {
				col[string(name)] = i
			}
			for _, c := range output.SpanColumns {
				if _, ok := col[c.Name]; !ok {
					return fmt.Errorf("not a spans file: no column %s", c.Name)
				}
			}
			return nil
		}, func(fields [][]byte) bool {
			return addSpanRow(by, col, fields, w)
		})
		if err != nil {
			return nil, err
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("no spans file in %s covers %s to %s: spans are recorded when the config has spans",
			dir, w.From.Format(time.RFC3339), w.To.Format(time.RFC3339))
	}
	out := make([]SpanLatency, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].WallUs != out[j].WallUs {
			return out[i].WallUs > out[j].WallUs
		}
		return out[i].Span < out[j].Span
	})
	return out, nil
}

// addSpanRow adds one row of a spans file to its span, when its minute is in w; false
// for a malformed row.
func addSpanRow(by map[string]*SpanLatency, col map[string]int, fields [][]byte, w Window) bool {
	if len(fields) < len(col) {
		return false
	}
	minute, err := time.Parse(hourfile.TimeLayout, string(fields[col["minute"]]))
	if err != nil {
		return false
	}
	if minute.Before(w.From) || !minute.Before(w.To) {
		return true
	}
	name := strings.TrimPrefix(string(fields[col["span"]]), "'")
	l := by[name]
	if l == nil {
		l = &SpanLatency{Span: name}
		by[name] = l
	}
	ints := []*int64{&l.Count, &l.WallUs, &l.PartUs[0], &l.PartUs[1], &l.PartUs[2], &l.PartUs[3]}
	for i, c := range []string{"count", "wall_us", "on_cpu_us", "runnable_us", "sleeping_us", "uninterruptible_us"} {
		v, ok := atoi(fields[col[c]])
		if !ok {
			return false
		}
		*ints[i] += v
	}
	for c, h := range map[string]*[state.SpanBuckets]uint64{"wall_hist": &l.WallHist, "on_cpu_hist": &l.CPUHist} {
		for b, f := range strings.Fields(string(fields[col[c]])) {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil || b >= state.SpanBuckets {
				return false
			}
			h[b] += n
		}
	}
	return true
}

// latencyColumns are the latency view's columns, in every format.
var latencyColumns = []string{"span", "spans", "avg_wall_ms", "wall_p50_ms", "wall_p90_ms", "wall_p99_ms",
	"cpu_p50_ms", "cpu_p90_ms", "cpu_p99_ms", "on_cpu_share", "runnable_share", "sleeping_share", "uninterruptible_share"}

// latencyRow is one span's values in latencyColumns' order.
func latencyRow(l *SpanLatency) []string {
	ms := func(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 3, 64) }
	share := func(us int64) string {
		if l.WallUs == 0 {
			return "0.00"
		}
		return strconv.FormatFloat(float64(us)/float64(l.WallUs), 'f', 2, 64)
	}
	return []string{l.Span, strconv.FormatInt(l.Count, 10), ms(l.WallUs / max(l.Count, 1)),
		ms(l.Percentile(&l.WallHist, 0.5)), ms(l.Percentile(&l.WallHist, 0.9)), ms(l.Percentile(&l.WallHist, 0.99)),
		ms(l.Percentile(&l.CPUHist, 0.5)), ms(l.Percentile(&l.CPUHist, 0.9)), ms(l.Percentile(&l.CPUHist, 0.99)),
		share(l.PartUs[0]), share(l.PartUs[1]), share(l.PartUs[2]), share(l.PartUs[3])}
}

// RenderLatency writes the latency view: per span, its count, the percentiles of wall and
// on-CPU time, and the average split of its wall time.
func RenderLatency(w io.Writer, spans []SpanLatency, win Window, format string) error {
	switch format {
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write(latencyColumns)
		for i := range spans {
			_ = cw.Write(latencyRow(&spans[i]))
		}
		cw.Flush()
		return cw.Error()
	case FormatJSON:
		rows := make([]map[string]string, len(spans))
		for i := range spans {
			rows[i] = map[string]string{}
			for j, v := range latencyRow(&spans[i]) {
				rows[i][latencyColumns[j]] = v
			}
		}
		return json.NewEncoder(w).Encode(map[string]any{"from": win.From, "to": win.To, "spans": rows})
	}
	fmt.Fprintf(w, "%s to %s: spans ended, percentiles as log2 bucket upper bounds\n\n",
		win.From.Format("2006-01-02 15:04:05 -07:00"), win.To.Format("2006-01-02 15:04:05 -07:00"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SPAN\tSPANS\tAVG ms\tWALL p50\tp90\tp99\tCPU p50\tp90\tp99\tON CPU\tRUNNABLE\tSLEEPING\tD\t")
	for i := range spans {
		fmt.Fprintln(tw, strings.Join(latencyRow(&spans[i]), "\t")+"\t")
	}
	return tw.Flush()
}
