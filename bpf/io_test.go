// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/blockdev"
)

// ioDelta is what the kernel side counted for dev and op between two readings.
func ioDelta(t *testing.T, tr *Tracker, before map[state.IOKey]state.IOStat, dev blockdev.Device, op state.IOOp) state.IOStat {
	t.Helper()
	after, err := tr.IOStats()
	if err != nil {
		t.Fatal(err)
	}
	k := state.IOKey{Dev: state.Dev(dev.Dev()), Op: op}
	return after[k].Sub(before[k])
}

// readKnown reads n times size bytes at random offsets of d with O_DIRECT.
func readKnown(t *testing.T, r *blockdev.DirectReader, n, size int, span int64) {
	t.Helper()
	for range n {
		off := rand.Int64N(span/int64(size)) * int64(size)
		if err := r.ReadAt(size, off); err != nil {
			t.Fatal(err)
		}
	}
}

// Every O_DIRECT read of a loop device nobody else uses is one read request of its size,
// and the kernel's own count (/sys/block/DEV/stat) agrees (blockdev.CountedAll).
func TestIOCountsLoopReads(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	dev := blockdev.LoopFile(t, 64<<20)
	r := blockdev.OpenDirect(t, dev.Path(), 64<<10)
	before, err := tr.IOStats()
	if err != nil {
		t.Fatal(err)
	}
	statBefore := blockdev.ReadStat(t, dev)
	readKnown(t, r, 300, 4096, 64<<20)
	readKnown(t, r, 50, 64<<10, 64<<20)
	got := ioDelta(t, tr, before, dev, state.IORead)
	stat := blockdev.ReadStat(t, dev)
	if !blockdev.CountedAll(got.Requests, 350) || stat.Reads-statBefore.Reads != 350 {
		t.Errorf("read requests: threadcap %d, /sys/block/%s/stat %d; want 350", got.Requests, dev.Name, stat.Reads-statBefore.Reads)
	}
	// A request the kernel side did not see is one of at most 64 KiB.
	want, unseen := uint64(300*4096+50*64<<10), (350-min(got.Requests, 350))*64<<10
	if got.Bytes > want || want-got.Bytes > unseen || (stat.ReadSectors-statBefore.ReadSectors)*512 != want {
		t.Errorf("read bytes: threadcap %d, stat %d; want %d", got.Bytes, (stat.ReadSectors-statBefore.ReadSectors)*512, want)
	}
	var hist uint64
	for i := range got.DeviceHist {
		hist += got.DeviceHist[i]
	}
	if hist != got.Requests || got.DeviceNs == 0 {
		t.Errorf("device histogram holds %d requests of %d, device time %d ns", hist, got.Requests, got.DeviceNs)
	}
}

// On the disk of the temp dir (the root disk, virtio, here), shared with the rest of the machine, threadcap's count
// of completed reads over a window is the kernel's within 1%.
func TestIOCountsRootDisk(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	dir := t.TempDir()
	dev := blockdev.ByName(t, diskOf(t, dir))
	// A file of real blocks: the devices cgroup may deny opening the disk itself, and
	// O_DIRECT reads of a file's holes do no I/O.
	r := blockdev.OpenDirect(t, blockdev.WrittenFile(t, dir, 64<<20), 4096)
	// The machine's own I/O goes on meanwhile: the disk's counts are read before and after
	// each reading of threadcap's, which must lie between the least and the most they
	// allow, within 1%.
	early := blockdev.ReadStat(t, dev)
	before, err := tr.IOStats()
	if err != nil {
		t.Fatal(err)
	}
	late := blockdev.ReadStat(t, dev)
	readKnown(t, r, 2000, 4096, 64<<20)
	end := blockdev.ReadStat(t, dev)
	got := ioDelta(t, tr, before, dev, state.IORead)
	least, most := end.Reads-late.Reads, blockdev.ReadStat(t, dev).Reads-early.Reads
	if least < 2000 || float64(got.Requests) < 0.99*float64(least) || float64(got.Requests) > 1.01*float64(most) {
		t.Errorf("%s: threadcap counted %d read requests, /sys/block/%s/stat %d to %d (2000 read here)", dev.Name, got.Requests, dev.Name, least, most)
	}
	t.Logf("%s: threadcap %d read requests, /sys/block/%s/stat %d to %d", dev.Name, got.Requests, dev.Name, least, most)
}

// diskOf is the disk that holds path, by its device number's /sys/dev/block entry.
func diskOf(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	name := blockdev.DiskOf(t, unix.Major(st.Dev), unix.Minor(st.Dev))
	if name == "" {
		t.Skipf("%s is not on a block device (device %d:%d)", path, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	return name
}

// A read of a slow device is in flight, attributed to the thread that made it, with its
// device, operation and size, for as long as the device takes. The device is a loop
// device over another that the reader's cgroup may read twice a second.
func TestIOInFlightAtTick(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	backing := blockdev.LoopFile(t, 16<<20)
	slow := blockdev.Loop(t, backing.Path())
	cg := blockdev.Throttle(t, backing, 2)
	r := blockdev.OpenDirect(t, slow.Path(), 4096)

	tid := make(chan int, 1)
	stop := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		leave, err := cg.Join()
		if err != nil {
			tid <- 0
			finished <- err
			return
		}
		tid <- unix.Gettid()
		err = readUntil(stop, r)
		leave() // before the test ends: its cgroup is removed then
		finished <- err
	}()
	reader := <-tid
	if reader == 0 {
		t.Fatal(<-finished)
	}
	defer func() {
		close(stop)
		if err := <-finished; err != nil {
			t.Error(err)
		}
	}()

	// At a 2/s limit a read takes about 500 ms at the device: a tick 200 ms from now sees
	// the reader's request, in flight.
	var seen state.IORequest
	deadline := time.Now().Add(10 * time.Second)
	for seen.Tid == 0 && time.Now().Before(deadline) {
		tick := Now() + uint64(200*time.Millisecond)
		tr.SetTick(tick)
		time.Sleep(300 * time.Millisecond)
		reqs, err := tr.InFlight(tick)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range reqs {
			if int(q.Tid) == reader && q.Dev == state.Dev(slow.Dev()) {
				seen = q
			}
		}
	}
	if seen.Tid == 0 {
		t.Fatalf("no request of reader %d on %s in flight at any tick", reader, slow.Name)
	}
	if seen.Op != state.IORead || seen.Bytes != 4096 || seen.IssueNs == 0 {
		t.Errorf("reader's request: %+v; want an issued read of 4096 bytes", seen)
	}
}

// readUntil reads r sequentially, 4096 bytes at a time, until stop is closed.
func readUntil(stop <-chan struct{}, r *blockdev.DirectReader) error {
	for off := int64(0); ; off += 4096 {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := r.ReadAt(4096, off); err != nil {
			return err
		}
	}
}

// inflightOf counts the requests of device dev in the in-flight table, and those kept
// for a tick in the table of completed ones.
func inflightOf(t *testing.T, tr *Tracker, dev blockdev.Device) (inFlight, done int) {
	t.Helper()
	var v ioTcIo
	var key uint64
	it := tr.io.Maps[ioMapIoInflight].Iterate()
	for it.Next(&key, &v) {
		if v.Dev == dev.Dev() {
			inFlight++
		}
	}
	var doneKey ioTcIoDoneKey
	dit := tr.io.Maps[ioMapIoDone].Iterate()
	for dit.Next(&doneKey, &v) {
		if v.Dev == dev.Dev() {
			done++
		}
	}
	if err := errors.Join(it.Err(), dit.Err()); err != nil {
		t.Fatal(err)
	}
	return inFlight, done
}

// Reads submitted asynchronously (Linux AIO, as libaio does) by a thread that exits
// before they complete are the submitter's while in flight, and leave nothing behind once
// they complete, even when kept for a tick they were in flight at.
func TestIOThreadExitLeaksNothing(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	backing := blockdev.LoopFile(t, 16<<20)
	slow := blockdev.Loop(t, backing.Path())
	cg := blockdev.Throttle(t, backing, 4)
	r := blockdev.OpenDirect(t, slow.Path(), 4096)
	aio, err := blockdev.NewAIO(8)
	if err != nil {
		t.Fatal(err)
	}
	defer aio.Close()

	submitted := make(chan error, 1)
	var submitter int
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		leave, err := cg.Join()
		if err == nil {
			submitter = unix.Gettid()
			err = aio.SubmitReads(r, 8, 4096)
			leave()
		}
		submitted <- err
	}()
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	// 8 reads at 4/s: in flight for up to 2 s. A tick now keeps those that complete after
	// it until it is read.
	tick := Now()
	tr.SetTick(tick)
	time.Sleep(50 * time.Millisecond)
	reqs, err := tr.InFlight(tick)
	if err != nil {
		t.Fatal(err)
	}
	mine := 0
	for _, q := range reqs {
		if q.Dev == state.Dev(slow.Dev()) {
			mine++
			if int(q.Tid) != submitter {
				t.Errorf("request %+v: want submitter %d", q, submitter)
			}
		}
	}
	if mine == 0 {
		t.Errorf("none of the submitter's reads of %s in flight", slow.Name)
	}
	tick = Now()
	tr.SetTick(tick)
	if err := aio.Wait(); err != nil {
		t.Fatal(err)
	}
	if n, done := inflightOf(t, tr, slow); n != 0 || done == 0 {
		t.Errorf("%s: %d requests in flight after all completed, %d kept for the tick they were in flight at; want none and some", slow.Name, n, done)
	}
	if _, err := tr.InFlight(tick); err != nil {
		t.Fatal(err)
	}
	if n, done := inflightOf(t, tr, slow); n+done != 0 {
		t.Errorf("%s: %d requests in flight, %d completed left after all completed and were read", slow.Name, n, done)
	}
}

// A tracker closed while a request is in flight takes its tables with it: nothing of the
// io object stays loaded.
func TestIOCloseInFlightLeaksNothing(t *testing.T) {
	tr := openTracker(t, Config{IO: true})
	backing := blockdev.LoopFile(t, 16<<20)
	slow := blockdev.Loop(t, backing.Path())
	cg := blockdev.Throttle(t, backing, 1)
	r := blockdev.OpenDirect(t, slow.Path(), 4096)
	aio, err := blockdev.NewAIO(4)
	if err != nil {
		t.Fatal(err)
	}
	defer aio.Close()
	submitted := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		leave, err := cg.Join()
		if err == nil {
			err = aio.SubmitReads(r, 4, 4096)
			leave()
		}
		submitted <- err
	}()
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	if n, _ := inflightOf(t, tr, slow); n == 0 {
		t.Fatalf("no request of %s in flight", slow.Name)
	}
	ids := ioMapIDs(t, tr)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel frees a map once the last program using it is gone, after an RCU grace
	// period, and the last mapping of it: cilium/ebpf unmaps a global variables' section
	// when the garbage collector finds it unused.
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range ids {
		for {
			m, err := ebpf.NewMapFromID(id)
			if err != nil {
				break
			}
			m.Close()
			runtime.GC()
			if time.Now().After(deadline) {
				t.Errorf("map %d of the io object still loaded 2 s after Close", id)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := aio.Wait(); err != nil {
		t.Fatal(err)
	}
}

// ioMapIDs are the kernel's ids of the io object's maps.
func ioMapIDs(t *testing.T, tr *Tracker) []ebpf.MapID {
	t.Helper()
	var ids []ebpf.MapID
	for _, m := range tr.io.Maps {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, ok := info.ID()
		if !ok {
			t.Skip("this kernel does not give map ids")
		}
		ids = append(ids, id)
	}
	return ids
}
