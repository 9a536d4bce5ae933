// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strconv"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// IOColumns are the columns of every io file: per minute, disk and operation, the block
// requests that completed in it.
var IOColumns = []Column{
	{"minute", TypeTimestampTZ, "", "Start of the minute the requests completed in, in the local time zone of threadcap (of the interval between two ticks, when ticks are further apart)."},
	{"disk", TypeVarchar, "", "The disk, as lsblk names it." + hourfile.TextNote},
	{"op", TypeVarchar, "", "read, write, flush, discard or other."},
	{"requests", TypeBigint, "", "Requests completed."},
	{"bytes", TypeBigint, "bytes", "Their size, summed."},
	{"queue_us", TypeBigint, "µs", "Their time queued, from insertion to issue to the driver, summed."},
	{"device_us", TypeBigint, "µs", "Their time at the device, from issue to completion, summed."},
	{"queue_hist", TypeVarchar, "", "Requests by time queued: space-separated counts of log2 buckets, the first under 1 µs, the i-th (from 0) of 2^(i-1) to 2^i µs; trailing empty buckets left out."},
	{"device_hist", TypeVarchar, "", "Requests by time at the device, in the buckets of queue_hist."},
}

// ioHeader heads every io file.
var ioHeader = HeaderOf(IOColumns)

// IOHeader is the first line of every io file, newline included.
func IOHeader() string { return ioHeader }

// AppendIOCSV appends one line of an io file.
func AppendIOCSV(dst []byte, minute time.Time, d *state.DiskIO) []byte {
	dst = minute.Local().AppendFormat(dst, hourfile.TimeLayout)
	dst = hourfile.AppendText(append(dst, ','), d.Disk)
	dst = append(append(dst, ','), d.Op.String()...)
	for _, v := range [...]uint64{d.Requests, d.Bytes, d.QueueNs / 1000, d.DeviceNs / 1000} {
		dst = strconv.AppendUint(append(dst, ','), v, 10)
	}
	dst = appendHist(append(dst, ','), &d.QueueHist)
	dst = appendHist(append(dst, ','), &d.DeviceHist)
	return append(dst, '\n')
}

func appendHist(dst []byte, h *[state.IOBuckets]uint64) []byte {
	n := len(h)
	for n > 0 && h[n-1] == 0 {
		n--
	}
	for i, v := range h[:n] {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendUint(dst, v, 10)
	}
	return dst
}
