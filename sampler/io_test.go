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

// Each minute gets what completed since the previous reading, the first minute what
// completed since the kernel side was loaded; a disk that is gone is forgotten, and a new
// disk under its number starts from nothing.
func TestIOMinutes(t *testing.T) {
	sys := sysWithDisks(t, map[string]string{"254:0": "vda", "259:1": "nvme0n1"})
	src := &fakeIO{stats: map[state.IOKey]state.IOStat{
		{Dev: vda, Op: state.IORead}:   {Requests: 100, Bytes: 409600},
		{Dev: gone, Op: state.IOWrite}: {Requests: 50},
	}, writtenRows: map[time.Time][]state.DiskIO{}}
	m := &ioMinutes{src: src, sink: src, names: newIORequests(src, sys, discard()).names, log: discard()}
	m0 := time.Date(2026, 11, 21, 14, 3, 0, 0, time.UTC)
	m.tick(m0.Add(time.Second)) // the first reading: nothing ended yet
	m.tick(m0.Add(30 * time.Second))
	if len(src.writtenRows) != 0 {
		t.Fatalf("minutes written before the first minute ended: %+v", src.writtenRows)
	}
	src.stats[state.IOKey{Dev: vda, Op: state.IORead}] = state.IOStat{Requests: 130, Bytes: 532480}
	src.stats[state.IOKey{Dev: gone, Op: state.IOWrite}] = state.IOStat{Requests: 60}
	if err := os.RemoveAll(filepath.Join(sys, "dev", "block", "259:1")); err != nil {
		t.Fatal(err)
	}
	m.tick(m0.Add(time.Minute + time.Second))
	want := []state.DiskIO{
		{Disk: "nvme0n1", Op: state.IOWrite, IOStat: state.IOStat{Requests: 60}},
		{Disk: "vda", Op: state.IORead, IOStat: state.IOStat{Requests: 130, Bytes: 532480}},
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

// A stop writes the minute so far; a start in the same minute (a new kernel side, whose
// sums start from 0) writes a second line for it at the next minute: the two add up to
// every request, and neither part is lost.
func TestIOMinuteAtStopAndRestart(t *testing.T) {
	sys := sysWithDisks(t, map[string]string{"254:0": "vda"})
	src := &fakeIO{stats: map[state.IOKey]state.IOStat{}, writtenRows: map[time.Time][]state.DiskIO{}}
	var lines []state.DiskIO
	sink := ioSinkFunc(func(minute time.Time, disks []state.DiskIO) error {
		for _, d := range disks {
			if !minute.Equal(m0Stop) {
				t.Errorf("a line for %s, want every line for %s", minute.Format("15:04"), m0Stop.Format("15:04"))
			}
			lines = append(lines, d)
		}
		return nil
	})
	key := state.IOKey{Dev: vda, Op: state.IORead}

	first := &ioMinutes{src: src, sink: sink, names: newIORequests(src, sys, discard()).names, log: discard()}
	first.tick(m0Stop.Add(time.Second))
	src.stats[key] = state.IOStat{Requests: 700, Bytes: 700 * 4096}
	first.tick(m0Stop.Add(20 * time.Second))
	first.stop(m0Stop.Add(20*time.Second + 500*time.Millisecond))
	if len(lines) != 1 || lines[0].Requests != 700 {
		t.Fatalf("at the stop: %+v, want one line of the 700 requests so far", lines)
	}

	src.stats[key] = state.IOStat{} // the next start's kernel side counts from 0
	second := &ioMinutes{src: src, sink: sink, names: newIORequests(src, sys, discard()).names, log: discard()}
	second.tick(m0Stop.Add(40 * time.Second))
	src.stats[key] = state.IOStat{Requests: 300, Bytes: 300 * 4096}
	second.tick(m0Stop.Add(time.Minute))
	if len(lines) != 2 || lines[1].Requests != 300 || lines[0].Requests+lines[1].Requests != 1000 {
		t.Errorf("after the restart: %+v, want a second line of 300 requests for the same minute", lines)
	}

	// A stop before the first tick has nothing to write.
	(&ioMinutes{src: src, sink: sink, log: discard()}).stop(m0Stop)
	if len(lines) != 2 {
		t.Errorf("a stop before any tick wrote %+v", lines[2:])
	}
}

var m0Stop = time.Date(2026, 11, 21, 14, 3, 0, 0, time.UTC)

type ioSinkFunc func(time.Time, []state.DiskIO) error

func (f ioSinkFunc) WriteIO(minute time.Time, disks []state.DiskIO) error { return f(minute, disks) }

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
