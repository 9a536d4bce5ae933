// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// fakeIO is an IOSource whose tables the test sets.
type fakeIO struct {
	reqs        []state.IORequest
	stats       map[state.IOKey]state.IOStat
	forgot      []uint64
	forgotDevs  []state.Dev
	writtenRows map[time.Time][]state.DiskIO
}

func (f *fakeIO) InFlight(uint64) ([]state.IORequest, error) { return f.reqs, nil }
func (f *fakeIO) ForgetIO(key uint64) error                  { f.forgot = append(f.forgot, key); return nil }
func (f *fakeIO) IOStats() (map[state.IOKey]state.IOStat, error) {
	out := map[state.IOKey]state.IOStat{}
	for k, v := range f.stats {
		out[k] = v
	}
	return out, nil
}
func (f *fakeIO) ForgetIODev(dev state.Dev) error {
	f.forgotDevs = append(f.forgotDevs, dev)
	for k := range f.stats {
		if k.Dev == dev {
			delete(f.stats, k)
		}
	}
	return nil
}
func (f *fakeIO) WriteIO(minute time.Time, disks []state.DiskIO) error {
	f.writtenRows[minute] = disks
	return nil
}

// sysWithDisks is a sysfs with the given disks, MAJ:MIN to name.
func sysWithDisks(t *testing.T, disks map[string]string) string {
	t.Helper()
	sys := t.TempDir()
	for majMin, name := range disks {
		dir := filepath.Join(sys, "dev", "block", majMin)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte("DEVNAME="+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func discard() *logrus.Entry {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return logrus.NewEntry(log)
}

const (
	vda  = state.Dev(254 << 20)
	gone = state.Dev(259<<20 | 1)
)

// A thread's row shows its oldest request in flight. A request in flight for long on a
// disk that is gone is deleted, and so is one issued to a disk with nothing in flight (its
// completion was missed); one on a busy disk, or still queued, is kept.
func TestIORequestsOldestAndStale(t *testing.T) {
	now := uint64(10 * time.Minute)
	idle := state.Dev(7 << 20)
	src := &fakeIO{reqs: []state.IORequest{
		{Key: 5, Tid: 10, StartNs: 100, Dev: idle, InsertNs: now - 3e9, IssueNs: now - 2e9},
		{Key: 6, Tid: 11, StartNs: 110, Dev: idle, InsertNs: now - 3e9},
		{Key: 1, Tid: 7, StartNs: 70, Dev: vda, Op: state.IOWrite, Bytes: 512, InsertNs: now - 5e6, IssueNs: now - 4e6},
		{Key: 2, Tid: 7, StartNs: 70, Dev: vda, Op: state.IORead, Bytes: 4096, InsertNs: now - 9e6},
		{Key: 3, Tid: 8, StartNs: 80, Dev: gone, InsertNs: now - 2*uint64(time.Minute)},
		{Key: 4, Tid: 9, StartNs: 90, Dev: vda, Op: state.IOFlush, InsertNs: now - 2*uint64(time.Minute), IssueNs: now - uint64(time.Minute)},
	}}
	sys := sysWithDisks(t, map[string]string{"254:0": "vda", "7:0": "loop0"})
	for majMin, inflight := range map[string]string{"254:0": "0 3\n", "7:0": "0 0\n"} {
		if err := os.WriteFile(filepath.Join(sys, "dev", "block", majMin, "inflight"), []byte(inflight), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newIORequests(src, sys, discard())
	r.read(now, time.Now())
	slices.Sort(src.forgot)
	if !slices.Equal(src.forgot, []uint64{3, 5}) {
		t.Errorf("forgot %v, want the requests of the disk that is gone and the one issued to the idle disk", src.forgot)
	}
	for _, tc := range []struct {
		th   state.Thread
		want state.Sample
	}{
		{state.Thread{Tid: 7, StartNs: 70}, state.Sample{IODev: "vda", IOOp: "read", IOBytes: 4096, IOUs: 9000, IOQueueUs: 9000}},
		{state.Thread{Tid: 8, StartNs: 80}, state.Sample{}},
		{state.Thread{Tid: 9, StartNs: 90}, state.Sample{IODev: "vda", IOOp: "flush", IOUs: 120e6, IOQueueUs: 60e6}},
		{state.Thread{Tid: 7, StartNs: 71}, state.Sample{}}, // the tid reused
		{state.Thread{Tid: 10, StartNs: 100}, state.Sample{}},
		{state.Thread{Tid: 11, StartNs: 110}, state.Sample{IODev: "loop0", IOOp: "read", IOUs: 3e6, IOQueueUs: 3e6}},
	} {
		var row state.Sample
		r.fill(&row, &tc.th, now)
		if row != tc.want {
			t.Errorf("thread %d: %+v, want %+v", tc.th.Tid, row, tc.want)
		}
	}
}

// Each minute gets what completed since the previous reading; a disk that is gone is
// forgotten, and a new disk under its number starts from nothing.
func TestIOMinutes(t *testing.T) {
	sys := sysWithDisks(t, map[string]string{"254:0": "vda", "259:1": "nvme0n1"})
	src := &fakeIO{stats: map[state.IOKey]state.IOStat{
		{Dev: vda, Op: state.IORead}:   {Requests: 100, Bytes: 409600},
		{Dev: gone, Op: state.IOWrite}: {Requests: 50},
	}, writtenRows: map[time.Time][]state.DiskIO{}}
	m := &ioMinutes{src: src, sink: src, names: newIORequests(src, sys, discard()).names, log: discard()}
	m0 := time.Date(2026, 11, 21, 14, 3, 0, 0, time.UTC)
	m.tick(m0.Add(time.Second)) // the first reading: nothing to write yet
	m.tick(m0.Add(30 * time.Second))
	src.stats[state.IOKey{Dev: vda, Op: state.IORead}] = state.IOStat{Requests: 130, Bytes: 532480}
	src.stats[state.IOKey{Dev: gone, Op: state.IOWrite}] = state.IOStat{Requests: 60}
	if err := os.RemoveAll(filepath.Join(sys, "dev", "block", "259:1")); err != nil {
		t.Fatal(err)
	}
	m.tick(m0.Add(time.Minute + time.Second))
	want := []state.DiskIO{
		{Disk: "nvme0n1", Op: state.IOWrite, IOStat: state.IOStat{Requests: 10}},
		{Disk: "vda", Op: state.IORead, IOStat: state.IOStat{Requests: 30, Bytes: 122880}},
	}
	if got := src.writtenRows[m0]; !slices.Equal(got, want) || len(src.writtenRows) != 1 {
		t.Errorf("minutes written: %+v, want only %s: %+v", src.writtenRows, m0.Format("15:04"), want)
	}
	if !slices.Equal(src.forgotDevs, []state.Dev{gone}) {
		t.Errorf("forgot %v, want the disk that is gone", src.forgotDevs)
	}
	// A new disk under the same number, with 5 requests of its own.
	src.stats[state.IOKey{Dev: gone, Op: state.IOWrite}] = state.IOStat{Requests: 5}
	sysWithDisksAt(t, sys, "259:1", "nvme0n1")
	m.tick(m0.Add(2*time.Minute + time.Second))
	if got := src.writtenRows[m0.Add(time.Minute)]; len(got) != 1 || got[0].Requests != 5 {
		t.Errorf("the new disk's minute: %+v, want its 5 write requests", got)
	}
}

func sysWithDisksAt(t *testing.T, sys, majMin, name string) {
	t.Helper()
	dir := filepath.Join(sys, "dev", "block", majMin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte("DEVNAME="+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
