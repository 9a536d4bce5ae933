// SPDX-License-Identifier: Apache-2.0

package sampler

import (
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

// staleIONs is how long a request stays in flight before the sampler asks whether its
// disk still exists: a disk removed with requests in flight never completes them.
const staleIONs = uint64(60e9)

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
	for _, q := range reqs {
		if mono-q.InsertNs > staleIONs && !r.names.Exists(q.Dev) {
			r.names.Forget(q.Dev)
			if ferr := r.src.ForgetIO(q.Key); ferr != nil && err == nil {
				err = ferr
			}
			continue
		}
		if old, ok := r.oldest[q.Tid]; !ok || q.InsertNs < old.InsertNs {
			r.oldest[q.Tid] = q
		}
	}
	return err
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
