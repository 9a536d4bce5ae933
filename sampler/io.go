// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/sampler/disks"
	"github.com/threadcap/threadcap/state"
)

// IOSource reads the block requests the kernel side tracks; *bpf.Tracker implements it.
type IOSource interface {
	// InFlight returns the requests in flight at tick, an instant named by SetTick.
	InFlight(tick uint64) ([]state.IORequest, error)
	// ForgetIO deletes a request the kernel side will never see complete.
	ForgetIO(key uint64) error
	// IOStats returns the completed requests per disk and operation, cumulative.
	IOStats() (map[state.IOKey]state.IOStat, error)
	// ForgetIODev deletes the statistics of a disk that is gone.
	ForgetIODev(dev state.Dev) error
}

// staleIONs is how long a request stays in flight before the sampler asks whether it
// really is: whether its disk still exists (one removed with requests in flight never
// completes them), and whether the disk has anything issued at all (/sys/block/DEV/inflight),
// as an issued request whose completion the kernel side missed would show in its
// thread's rows until the request's memory is reused.
const staleIONs = uint64(time.Second)

// ioRequests keeps, per thread, its oldest request in flight at the tick.
type ioRequests struct {
	src    IOSource
	names  *disks.Names
	oldest map[int32]state.IORequest
	log    *logrus.Entry
	errLog rateLimit
}

func newIORequests(src IOSource, sys string, log *logrus.Entry) *ioRequests {
	return &ioRequests{
		src: src, names: disks.New(sys), oldest: map[int32]state.IORequest{},
		log: log, errLog: rateLimit{every: time.Minute},
	}
}

// read takes the requests in flight at mono, the tick labelled wall. A failed read leaves
// the tick's rows without io columns (or some of them), and is logged once a minute at most.
func (r *ioRequests) read(mono uint64, wall time.Time) {
	if err := r.readAt(mono); err != nil && r.errLog.allow(wall) {
		r.log.WithError(err).Warn("reading block requests in flight")
	}
}

// readAt takes the requests in flight at mono. Those of a disk that is gone are deleted.
func (r *ioRequests) readAt(mono uint64) error {
	clear(r.oldest)
	reqs, err := r.src.InFlight(mono)
	disks := map[state.Dev]diskState{}
	for _, q := range reqs {
		if mono-q.InsertNs > staleIONs && q.DoneNs == 0 {
			d, known := disks[q.Dev]
			if !known {
				d = r.check(q.Dev)
				disks[q.Dev] = d
			}
			// A request not yet issued may wait for long in its queue, and inflight
			// counts only the issued ones.
			if d.gone || (d.idle && q.IssueNs != 0) {
				if ferr := r.src.ForgetIO(q.Key); ferr != nil && err == nil {
					err = ferr
				}
				continue
			}
		}
		if old, ok := r.oldest[q.Tid]; !ok || q.InsertNs < old.InsertNs {
			r.oldest[q.Tid] = q
		}
	}
	return err
}

// diskState is what the sampler found of a disk with a request in flight for long.
type diskState struct{ gone, idle bool }

func (r *ioRequests) check(dev state.Dev) diskState {
	if !r.names.Exists(dev) {
		r.names.Forget(dev)
		return diskState{gone: true}
	}
	return diskState{idle: r.names.Idle(dev)}
}

// fill gives the row of thread th its oldest request in flight at mono.
func (r *ioRequests) fill(row *state.Sample, th *state.Thread, mono uint64) {
	q, ok := r.oldest[th.Tid]
	if !ok || (q.StartNs != th.StartNs && !th.Seeded) {
		return
	}
	row.IODev = r.names.Name(q.Dev)
	row.IOOp = q.Op.String()
	row.IOBytes = int64(q.Bytes)
	row.IOUs, row.IOQueueUs = q.TimesAt(mono)
}

// IOSink takes each minute's block I/O per disk and operation; output.Writer implements it.
type IOSink interface {
	WriteIO(minute time.Time, disks []state.DiskIO) error
}

// ioMinutes turns the kernel side's cumulative block I/O statistics into each minute's.
type ioMinutes struct {
	src   IOSource
	sink  IOSink
	names *disks.Names
	prev  map[state.IOKey]state.IOStat
	// minute is the start of the minute of the last reading, zero before the first.
	minute time.Time
	log    *logrus.Entry
	errLog rateLimit
}

// tick hands the sink the minute just ended, at the first tick of a new minute. The
// requests completed between the readings at the first ticks of two minutes are the
// earlier minute's; the kernel side counts from when it was loaded, so the first minute
// holds what completed since then, and a start in a minute that a stop already wrote
// adds a second line for it. A disk that is gone has its last minute written, then its
// statistics deleted.
func (m *ioMinutes) tick(wall time.Time) {
	minute := wall.Truncate(time.Minute)
	if !m.minute.IsZero() && !minute.After(m.minute) {
		return
	}
	m.logError(m.read(minute), wall)
}

// stop writes the minute so far, as threadcap stops: what completed since its last
// reading would otherwise be lost with the kernel side's sums.
func (m *ioMinutes) stop(wall time.Time) {
	if m.minute.IsZero() {
		return // no tick taken: stopped while starting
	}
	m.logError(m.read(m.minute), wall)
}

func (m *ioMinutes) logError(err error, wall time.Time) {
	if err != nil && m.errLog.allow(wall) {
		m.log.WithError(err).Warn("reading block i/o statistics")
	}
}

// read writes the minute being summed and starts minute. The first reading only names
// the disks and starts the first minute, whose sums start from 0.
func (m *ioMinutes) read(minute time.Time) error {
	first := m.minute.IsZero()
	cur, err := m.src.IOStats()
	if err != nil {
		return err
	}
	var rows []state.DiskIO
	for k, st := range cur {
		// Named at every reading, so that a disk removed before the next one still has
		// its name in its last minute.
		name := m.names.Name(k.Dev)
		if d := st.Sub(m.prev[k]); d.Requests > 0 && !first {
			rows = append(rows, state.DiskIO{Disk: name, Op: k.Op, IOStat: d})
		}
	}
	gone := map[state.Dev]bool{}
	for k := range cur {
		if _, checked := gone[k.Dev]; !checked {
			gone[k.Dev] = !m.names.Exists(k.Dev)
		}
		if gone[k.Dev] {
			// A new disk given its number starts from nothing.
			delete(cur, k)
		}
	}
	for dev, g := range gone {
		if !g {
			continue
		}
		m.names.Forget(dev)
		if ferr := m.src.ForgetIODev(dev); ferr != nil && err == nil {
			err = ferr
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Disk != rows[j].Disk {
			return rows[i].Disk < rows[j].Disk
		}
		return rows[i].Op < rows[j].Op
	})
	if len(rows) > 0 {
		if werr := m.sink.WriteIO(m.minute, rows); werr != nil && err == nil {
			err = werr
		}
	}
	if !first {
		m.prev = cur
	}
	m.minute = minute
	return err
}
