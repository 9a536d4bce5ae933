// SPDX-License-Identifier: Apache-2.0

package state

import "fmt"

// IOOp is a block request's operation, as the kernel side records it (enum tc_io_op).
type IOOp uint8

// The operations, in the kernel side's numbering.
const (
	IORead IOOp = iota
	IOWrite
	IOFlush
	IODiscard
	IOOther // secure erase, write zeroes, zone and driver commands
	IOOps   // the number of operations
)

var ioOpNames = [IOOps]string{"read", "write", "flush", "discard", "other"}

// String is the operation's name in the CSV files: read, write, flush, discard or other.
func (o IOOp) String() string {
	if o < IOOps {
		return ioOpNames[o]
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// Dev is a block device number as the kernel keeps it (dev_t: major << 20 | minor).
type Dev uint32

// Major and Minor split the number as /sys/dev/block names it (MAJ:MIN).
func (d Dev) Major() uint32 { return uint32(d) >> 20 }
func (d Dev) Minor() uint32 { return uint32(d) & (1<<20 - 1) }

// IORequest is a block request in flight, attributed to the thread that submitted it.
type IORequest struct {
	Key     uint64 // the kernel side's key for it (the request's address)
	Tid     int32  // the submitting thread
	StartNs uint64 // its start time, which tells a reused tid apart
	Dev     Dev    // the disk
	Op      IOOp
	Bytes   uint32
	// InsertNs is when it was queued (or issued, if it went straight to the driver),
	// IssueNs when the driver took it (0: still queued) and DoneNs when it completed (0:
	// in flight), all CLOCK_MONOTONIC.
	InsertNs, IssueNs, DoneNs uint64
}

// InFlightAt tells whether the request was in flight at mono.
func (r *IORequest) InFlightAt(mono uint64) bool {
	return r.InsertNs <= mono && (r.DoneNs == 0 || r.DoneNs > mono)
}

// TimesAt are how long the request had been in flight at mono, and how much of it queued
// before the driver took it, in µs.
func (r *IORequest) TimesAt(mono uint64) (totalUs, queueUs int64) {
	issued := mono
	if r.IssueNs != 0 && r.IssueNs <= mono {
		issued = r.IssueNs
	}
	return int64(mono-r.InsertNs) / 1000, int64(issued-r.InsertNs) / 1000
}

// IOBuckets is the number of buckets of an IOStat's histograms: bucket 0 holds requests
// under 1 µs, bucket i >= 1 those of [2^(i-1), 2^i) µs, and the last also any longer.
const IOBuckets = 32

// IOKey is a disk and an operation.
type IOKey struct {
	Dev Dev
	Op  IOOp
}

// IOStat sums the completed requests of a disk and operation: cumulative as the kernel
// side reads them, or over an interval as the difference of two readings.
type IOStat struct {
	Requests, Bytes       uint64
	QueueNs, DeviceNs     uint64 // insert to issue, issue to completion
	QueueHist, DeviceHist [IOBuckets]uint64
}

// Sub returns s - prev, field by field.
func (s IOStat) Sub(prev IOStat) IOStat {
	d := IOStat{
		Requests: s.Requests - prev.Requests, Bytes: s.Bytes - prev.Bytes,
		QueueNs: s.QueueNs - prev.QueueNs, DeviceNs: s.DeviceNs - prev.DeviceNs,
	}
	for i := range d.QueueHist {
		d.QueueHist[i] = s.QueueHist[i] - prev.QueueHist[i]
		d.DeviceHist[i] = s.DeviceHist[i] - prev.DeviceHist[i]
	}
	return d
}

// DiskIO is what a disk's requests of one operation did over an interval.
type DiskIO struct {
	Disk string // as lsblk names it
	Op   IOOp
	IOStat
}
