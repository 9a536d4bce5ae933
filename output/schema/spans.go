// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strconv"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// SpanColumns are the spans file's columns, in order.
var SpanColumns = []Column{
	{"minute", TypeTimestampTZ, "", "The minute the spans ended in (as read at the first tick after it), RFC 3339 in the local time zone."},
	{"span", TypeVarchar, "", "The span's name, as configured."},
	{"count", TypeBigint, "", "Spans of that name that ended in the minute."},
	{"wall_us", TypeBigint, "µs", "Their wall time, start to end, summed."},
	{"on_cpu_us", TypeBigint, "µs", "The part of wall_us on CPU."},
	{"runnable_us", TypeBigint, "µs", "The part of wall_us waiting for a CPU."},
	{"sleeping_us", TypeBigint, "µs", "The part of wall_us in interruptible sleep (or stopped)."},
	{"uninterruptible_us", TypeBigint, "µs", "The part of wall_us in uninterruptible sleep; the four parts add up to wall_us."},
	{"wall_hist", TypeVarchar, "", "Spans by wall time, log2 buckets: space-separated counts of bucket 0 (under 1 µs), 1 ([1, 2) µs), … b ([2^(b-1), 2^b) µs), up to the last bucket used."},
	{"on_cpu_hist", TypeVarchar, "", "Spans by on-CPU time, in the same buckets."},
}

// spansHeader heads every spans file.
var spansHeader = HeaderOf(SpanColumns)

// SpansHeader is the first line of every spans file, newline included.
func SpansHeader() string { return spansHeader }

// AppendSpanCSV appends one line of a spans file.
func AppendSpanCSV(dst []byte, r *state.SpanMinute) []byte {
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
