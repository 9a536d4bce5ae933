// SPDX-License-Identifier: Apache-2.0

package state

import "time"

// SpanBuckets is the number of log2 buckets of a span histogram: bucket 0 holds spans
// under 1 µs, bucket b those in [2^(b-1), 2^b) µs, the last one everything longer; the
// buckets of the io file's histograms.
const SpanBuckets = IOBuckets

// SpanMinute is what the spans of one name that ended in one minute added up to: a row
// of the spans file. Times are microseconds; Parts split Wall exactly into on CPU,
// runnable, sleeping (stopped included) and uninterruptible.
type SpanMinute struct {
	Minute            time.Time
	Span              string
	Count             int64
	WallUs            int64
	PartUs            [4]int64
	WallHist, CPUHist [SpanBuckets]uint64
}
