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

// WriteSpans appends one minute's span rows to the hour's spans file (see writeMinute).
func (w *Writer) WriteSpans(minute time.Time, rows []state.SpanMinute) error {
	var buf []byte
	for i := range rows {
		buf = appendSpanRow(buf, &rows[i])
	}
	return w.writeMinute(&w.spans, minute, buf, "writing the spans file failed")
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
