// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/threadcap/threadcap/state"
)

// ioInflightEntries is how many block requests can be tracked in flight at once: far more
// than the queues of a machine's disks hold (a request past it is counted in LostIOs).
const ioInflightEntries = 16384

// loadIO loads the block I/O object (io.bpf.c); the caller attaches its programs.
func loadIO() (*ebpf.Collection, error) {
	spec, err := loadIo()
	if err != nil {
		return nil, err
	}
	spec.Maps[ioMapIoInflight].MaxEntries = ioInflightEntries
	spec.Maps[ioMapIoDone].MaxEntries = ioInflightEntries
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, explain(fmt.Errorf("loading block i/o objects: %w", err))
	}
	return coll, nil
}

// ioBatch is how many requests one syscall reads.
const ioBatch = 256

// InFlight returns the block requests in flight at tick (an instant named by SetTick):
// those still in flight, and those that completed since, which the kernel side kept for
// this read and which it then deletes. nil when io tracking is off. Not safe for
// concurrent use: the sampler's tick calls it.
func (t *Tracker) InFlight(tick uint64) ([]state.IORequest, error) {
	if t.io == nil {
		return nil, nil
	}
	// Read before the maps: a request added after this read moves it.
	var added uint64
	if err := t.io.Variables[ioVarIoAdded].Get(&added); err != nil {
		return nil, fmt.Errorf("reading the block requests added: %w", err)
	}
	if t.ioEmpty && added == t.ioEmptyAt {
		return nil, nil
	}
	if t.ioKeys == nil {
		t.ioKeys, t.ioDone = make([]uint64, ioBatch), make([]ioTcIoDoneKey, ioBatch)
		t.ioVals = make([]ioTcIo, ioBatch)
	}
	var reqs []state.IORequest
	var entries int
	add := func(key uint64, v *ioTcIo) {
		entries++
		r := state.IORequest{
			Key: key, Tid: int32(v.Tid), StartNs: v.StartNs, Dev: state.Dev(v.Dev),
			Op: state.IOOp(v.Op), Bytes: v.Bytes,
			InsertNs: v.InsertNs, IssueNs: v.IssueNs, DoneNs: v.DoneNs,
		}
		if r.InFlightAt(tick) {
			reqs = append(reqs, r)
		}
	}
	err := batches(t.io.Maps[ioMapIoInflight], t.ioKeys, t.ioVals, func(i int) { add(t.ioKeys[i], &t.ioVals[i]) })
	if err != nil {
		return reqs, fmt.Errorf("reading block requests in flight: %w", err)
	}
	var done []ioTcIoDoneKey
	err = batches(t.io.Maps[ioMapIoDone], t.ioDone, t.ioVals, func(i int) {
		add(t.ioDone[i].Rq, &t.ioVals[i])
		done = append(done, t.ioDone[i])
	})
	if err != nil {
		return reqs, fmt.Errorf("reading block requests completed since the tick: %w", err)
	}
	if len(done) > 0 {
		if _, err := t.io.Maps[ioMapIoDone].BatchDelete(done, nil); err != nil {
			return reqs, fmt.Errorf("deleting block requests read: %w", err)
		}
	}
	t.ioEmpty, t.ioEmptyAt = entries == 0, added
	return reqs, nil
}

// batches reads every entry of m, len(keys) at a time, calling fn with the index of each
// in keys and vals.
func batches(m *ebpf.Map, keys, vals any, fn func(i int)) error {
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			fn(i)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ForgetIO deletes a request in flight from the kernel side's table: one of a disk that
// is gone, which will never complete.
func (t *Tracker) ForgetIO(key uint64) error {
	if err := t.io.Maps[ioMapIoInflight].Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("deleting block request %#x: %w", key, err)
	}
	return nil
}

// IOStats returns the completed requests per disk and operation, cumulative since Open;
// nil when io tracking is off.
func (t *Tracker) IOStats() (map[state.IOKey]state.IOStat, error) {
	if t.io == nil {
		return nil, nil
	}
	out := map[state.IOKey]state.IOStat{}
	var key ioTcIoKey
	var perCPU []ioTcIoStat
	it := t.io.Maps[ioMapIoStats].Iterate()
	for it.Next(&key, &perCPU) {
		var sum state.IOStat
		for i := range perCPU {
			c := &perCPU[i]
			sum.Requests += c.Requests
			sum.Bytes += c.Bytes
			sum.QueueNs += c.QueueNs
			sum.DeviceNs += c.DeviceNs
			for b := range sum.QueueHist {
				sum.QueueHist[b] += c.QueueHist[b]
				sum.DeviceHist[b] += c.DeviceHist[b]
			}
		}
		out[state.IOKey{Dev: state.Dev(key.Dev), Op: state.IOOp(key.Op)}] = sum
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("reading block i/o statistics: %w", err)
	}
	return out, nil
}

// ForgetIODev deletes a disk's statistics: the disk is gone.
func (t *Tracker) ForgetIODev(dev state.Dev) error {
	for op := range state.IOOps {
		err := t.io.Maps[ioMapIoStats].Delete(ioTcIoKey{Dev: uint32(dev), Op: uint32(op)})
		if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("deleting block i/o statistics of %d:%d: %w", dev.Major(), dev.Minor(), err)
		}
	}
	return nil
}

// LostIOs counts block requests not tracked because the in-flight table was full.
func (t *Tracker) LostIOs() uint64 {
	var n uint64
	if t.io != nil {
		_ = t.io.Variables[ioVarLostIos].Get(&n)
	}
	return n
}
