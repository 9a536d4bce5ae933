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

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
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
	return bucketPercentile(h, l.Count, p)
}

// bucketPercentile is the upper bound, in µs, of the log2 bucket of h (count in all) that
// holds the p-th percentile. Spans and block requests share the buckets.
func bucketPercentile(h *[state.IOBuckets]uint64, count int64, p float64) int64 {
	var below uint64
	for b, n := range h {
		below += n
		if float64(below) >= p*float64(count) && below > 0 {
			return 1 << b
		}
	}
	return 0
}

// DiskLatency is what the block requests of one disk and operation that completed in a
// window added up to, from the io files.
type DiskLatency struct {
	Disk, Op              string
	Requests, Bytes       int64
	QueueUs, DeviceUs     int64
	QueueHist, DeviceHist [state.IOBuckets]uint64
}

// Percentile is the upper bound, in µs, of the log2 bucket of h holding the p-th percentile.
func (d *DiskLatency) Percentile(h *[state.IOBuckets]uint64, p float64) int64 {
	return bucketPercentile(h, d.Requests, p)
}

// Latencies is the latency view: spans from the spans files, disks from the io files.
type Latencies struct {
	Spans []SpanLatency
	Disks []DiskLatency
	// Damaged lists the spans and io files read in part or not at all.
	Damaged []FileDamage
}

// Latency reads the spans and io files of dir for the minutes in w: by span, the slowest
// (most wall time in all) first, and by disk and operation, the most device time first.
func Latency(dir string, w Window) (Latencies, error) {
	all, err := hourfile.List(dir)
	if err != nil {
		return Latencies{}, fmt.Errorf("listing spans and io files: %w", err)
	}
	spans, disks := map[string]*SpanLatency{}, map[[2]string]*DiskLatency{}
	var out Latencies
	read := 0
	for _, f := range append(hourfile.ForReading(all, hourfile.Spans), hourfile.ForReading(all, hourfile.IO)...) {
		if !f.Hour.Before(w.To) || !f.Hour.Add(time.Hour).After(w.From) {
			continue
		}
		read++
		kind, columns, add := "spans", schema.SpanColumns, func(col map[string]int, fields [][]byte) bool {
			return addSpanRow(spans, col, fields, w)
		}
		if f.Kind == hourfile.IO {
			kind, columns, add = "io", schema.IOColumns, func(col map[string]int, fields [][]byte) bool {
				return addDiskRow(disks, col, fields, w)
			}
		}
		var col map[string]int
		_, err := readFile(f.Path, &out.Damaged, nil, func(h [][]byte) error {
			col = map[string]int{}
			for i, name := range h {
				col[string(name)] = i
			}
			for _, c := range columns {
				if _, ok := col[c.Name]; !ok {
					return fmt.Errorf("not a %s file: no column %s", kind, c.Name)
				}
			}
			return nil
		}, func(fields [][]byte, _ []byte) bool { return add(col, fields) })
		if err != nil {
			return Latencies{}, err
		}
	}
	if read == 0 {
		return Latencies{}, fmt.Errorf("no spans or io file in %s covers %s to %s: spans are recorded when the config has spans, block requests when io is on",
			dir, w.From.Format(time.RFC3339), w.To.Format(time.RFC3339))
	}
	for _, l := range spans {
		out.Spans = append(out.Spans, *l)
	}
	sort.Slice(out.Spans, func(i, j int) bool {
		if out.Spans[i].WallUs != out.Spans[j].WallUs {
			return out.Spans[i].WallUs > out.Spans[j].WallUs
		}
		return out.Spans[i].Span < out.Spans[j].Span
	})
	for _, d := range disks {
		out.Disks = append(out.Disks, *d)
	}
	sort.Slice(out.Disks, func(i, j int) bool {
		a, b := &out.Disks[i], &out.Disks[j]
		if a.DeviceUs != b.DeviceUs {
			return a.DeviceUs > b.DeviceUs
		}
		return a.Disk+" "+a.Op < b.Disk+" "+b.Op
	})
	return out, nil
}

// addSpanRow adds one row of a spans file to its span, when its minute is in w; false
// for a malformed row.
func addSpanRow(by map[string]*SpanLatency, col map[string]int, fields [][]byte, w Window) bool {
	in, ok := minuteIn(col, fields, w)
	if !in {
		return ok
	}
	name := strings.TrimPrefix(string(fields[col["span"]]), "'")
	l := by[name]
	if l == nil {
		l = &SpanLatency{Span: name}
		by[name] = l
	}
	return addInts(col, fields, map[string]*int64{"count": &l.Count, "wall_us": &l.WallUs,
		"on_cpu_us": &l.PartUs[0], "runnable_us": &l.PartUs[1], "sleeping_us": &l.PartUs[2], "uninterruptible_us": &l.PartUs[3]}) &&
		addHist(&l.WallHist, fields[col["wall_hist"]]) && addHist(&l.CPUHist, fields[col["on_cpu_hist"]])
}

// minuteIn says whether a spans or io file's row is of a minute in w; ok is false for a
// malformed row.
func minuteIn(col map[string]int, fields [][]byte, w Window) (in, ok bool) {
	if len(fields) < len(col) {
		return false, false
	}
	minute, err := time.Parse(hourfile.TimeLayout, string(fields[col["minute"]]))
	if err != nil {
		return false, false
	}
	return !minute.Before(w.From) && minute.Before(w.To), true
}

// addInts adds the integer columns of a row to their sums; false when one is malformed.
func addInts(col map[string]int, fields [][]byte, sums map[string]*int64) bool {
	for c, sum := range sums {
		v, ok := atoi(fields[col[c]])
		if !ok {
			return false
		}
		*sum += v
	}
	return true
}

// addHist adds a histogram column (space-separated bucket counts) to h; false when it is
// malformed.
func addHist(h *[state.IOBuckets]uint64, field []byte) bool {
	for b, f := range strings.Fields(string(field)) {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || b >= len(h) {
			return false
		}
		h[b] += n
	}
	return true
}

// addDiskRow adds one row of an io file to its disk and operation, when its minute is in
// w; false for a malformed row.
func addDiskRow(by map[[2]string]*DiskLatency, col map[string]int, fields [][]byte, w Window) bool {
	in, ok := minuteIn(col, fields, w)
	if !in {
		return ok
	}
	key := [2]string{strings.TrimPrefix(string(fields[col["disk"]]), "'"), string(fields[col["op"]])}
	d := by[key]
	if d == nil {
		d = &DiskLatency{Disk: key[0], Op: key[1]}
		by[key] = d
	}
	return addInts(col, fields, map[string]*int64{"requests": &d.Requests, "bytes": &d.Bytes,
		"queue_us": &d.QueueUs, "device_us": &d.DeviceUs}) &&
		addHist(&d.QueueHist, fields[col["queue_hist"]]) && addHist(&d.DeviceHist, fields[col["device_hist"]])
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

// diskColumns are the disks' columns of the latency view.
var diskColumns = []string{"disk", "op", "requests", "mb", "avg_queue_ms", "avg_device_ms",
	"queue_p50_ms", "queue_p90_ms", "queue_p99_ms", "device_p50_ms", "device_p90_ms", "device_p99_ms"}

// diskRow is one disk and operation's values in diskColumns' order.
func diskRow(d *DiskLatency) []string {
	ms := func(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 3, 64) }
	n := max(d.Requests, 1)
	return []string{d.Disk, d.Op, strconv.FormatInt(d.Requests, 10), strconv.FormatFloat(float64(d.Bytes)/1e6, 'f', 1, 64),
		ms(d.QueueUs / n), ms(d.DeviceUs / n),
		ms(d.Percentile(&d.QueueHist, 0.5)), ms(d.Percentile(&d.QueueHist, 0.9)), ms(d.Percentile(&d.QueueHist, 0.99)),
		ms(d.Percentile(&d.DeviceHist, 0.5)), ms(d.Percentile(&d.DeviceHist, 0.9)), ms(d.Percentile(&d.DeviceHist, 0.99))}
}

// RenderLatency writes the latency view: per span, its count, the percentiles of wall and
// on-CPU time, and the average split of its wall time; per disk and operation, its
// requests and the percentiles of their time queued and at the device. CSV, being one
// table, has the spans only (the io files themselves are CSV, by minute).
func RenderLatency(w io.Writer, lat Latencies, win Window, format string) error {
	spans := make([][]string, len(lat.Spans))
	for i := range lat.Spans {
		spans[i] = latencyRow(&lat.Spans[i])
	}
	disks := make([][]string, len(lat.Disks))
	for i := range lat.Disks {
		disks[i] = diskRow(&lat.Disks[i])
	}
	switch format {
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write(latencyColumns)
		_ = cw.WriteAll(spans)
		return cw.Error()
	case FormatJSON:
		damaged := lat.Damaged
		if damaged == nil {
			damaged = []FileDamage{}
		}
		return json.NewEncoder(w).Encode(map[string]any{"from": win.From, "to": win.To,
			"spans": named(latencyColumns, spans), "disks": named(diskColumns, disks), "damaged_files": damaged})
	}
	fmt.Fprintf(w, "%s to %s: spans ended and block requests completed, percentiles as log2 bucket upper bounds\n",
		win.From.Format("2006-01-02 15:04:05 -07:00"), win.To.Format("2006-01-02 15:04:05 -07:00"))
	writeDamage(w, lat.Damaged)
	if err := table(w, "SPAN\tSPANS\tAVG ms\tWALL p50\tp90\tp99\tCPU p50\tp90\tp99\tON CPU\tRUNNABLE\tSLEEPING\tD", spans); err != nil {
		return err
	}
	return table(w, "DISK\tOP\tREQUESTS\tMB\tAVG QUEUE ms\tAVG DEVICE ms\tQUEUE p50\tp90\tp99\tDEVICE p50\tp90\tp99", disks)
}

// table writes rows under head (tab-separated), right-aligned, after a blank line; nothing
// when there are no rows.
func table(w io.Writer, head string, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, head+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

// named pairs each row's values with their columns.
func named(columns []string, rows [][]string) []map[string]string {
	out := make([]map[string]string, len(rows))
	for i, row := range rows {
		out[i] = make(map[string]string, len(columns))
		for j, v := range row {
			out[i][columns[j]] = v
		}
	}
	return out
}
