// SPDX-License-Identifier: Apache-2.0

package output

import (
	"strconv"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// SpanColumns are the spans file's columns, in order.
var SpanColumns = []Column{
	{"minute", typeTimestampTZ, "", "The minute the spans ended in (as read at the first tick after it), RFC 3339 in the local time zone."},
	{"span", typeVarchar, "", "The span's name, as configured."},
	{"count", typeBigint, "", "Spans of that name that ended in the minute."},
	{"wall_us", typeBigint, "µs", "Their wall time, start to end, summed."},
	{"on_cpu_us", typeBigint, "µs", "The part of wall_us on CPU."},
	{"runnable_us", typeBigint, "µs", "The part of wall_us waiting for a CPU."},
	{"sleeping_us", typeBigint, "µs", "The part of wall_us in interruptible sleep (or stopped)."},
	{"uninterruptible_us", typeBigint, "µs", "The part of wall_us in uninterruptible sleep; the four parts add up to wall_us."},
	{"wall_hist", typeVarchar, "", "Spans by wall time, log2 buckets: space-separated counts of bucket 0 (under 1 µs), 1 ([1, 2) µs), … b ([2^(b-1), 2^b) µs), up to the last bucket used."},
	{"on_cpu_hist", typeVarchar, "", "Spans by on-CPU time, in the same buckets."},
}

// spansHeader heads every spans file.
var spansHeader = headerOf(SpanColumns)

// SpansHeader is the first line of every spans file, newline included.
func SpansHeader() string { return spansHeader }

// WriteSpans appends one minute's span rows to the spans file of the minute's hour. A
// failure is logged once an hour: the samples matter more.
func (w *Writer) WriteSpans(minute time.Time, rows []state.SpanMinute) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if len(rows) == 0 || w.paused != nil {
		return nil
	}
	hour := minute.UTC().Truncate(time.Hour)
	if !w.spans.current(hour) {
		if err := w.spans.close(); err != nil {
			w.log.WithError(err).Debug("closing the previous hour's spans file failed")
		}
		hf, _, err := openKindFile(hourfile.Spans, w.cfg.Dir, hour, w.cfg.FileMode, w.gid)
		if err != nil {
			w.spans.fail(w, err, "writing the spans file failed")
			return nil
		}
		w.spans.file = hf
	}
	var buf []byte
	for i := range rows {
		buf = appendSpanRow(buf, &rows[i])
	}
	if err := w.spans.appendLines(buf); err != nil {
		w.spans.fail(w, err, "writing the spans file failed")
	}
	return nil
}

func appendSpanRow(dst []byte, r *state.SpanMinute) []byte {
	dst = r.Minute.Local().AppendFormat(dst, hourfile.TimeLayout)
	dst = hourfile.AppendText(append(dst, ','), r.Span)
	dst = strconv.AppendInt(append(dst, ','), r.Count, 10)
	dst = strconv.AppendInt(append(dst, ','), r.WallUs, 10)
	for _, us := range r.PartUs {
		dst = strconv.AppendInt(append(dst, ','), us, 10)
	}
	dst = appendHist(append(dst, ','), &r.WallHist)
	dst = appendHist(append(dst, ','), &r.CPUHist)
	return append(dst, '\n')
}
