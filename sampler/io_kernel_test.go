// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/blockdev"
	"github.com/threadcap/threadcap/test/privileged"
)

// A thread reading a slow device is in D state, and its rows say on which device, what
// and how much it reads, and for how long the read has been in flight: at least as long
// as the device holds it. The slow device is a loop device over another, which the
// reader's cgroup (v1 blkio: this kernel has no device-mapper, so no delay target) may
// read once a second: each read spends about a second at the loop device.
func TestIORowsOfSlowDevice(t *testing.T) {
	privileged.Require(t)
	tr, err := bpf.Open(bpf.Config{IO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	backing := blockdev.LoopFile(t, 16<<20)
	slow := blockdev.Loop(t, backing.Path())
	const iops = 1
	cg := blockdev.Throttle(t, backing, iops)
	r := blockdev.OpenDirect(t, slow.Path(), 4096)

	log := logrus.New()
	log.SetOutput(io.Discard)
	rec := &recorder{t: t}
	s, err := sampler.New(sampler.Config{
		Interval: 100 * time.Millisecond, Self: -1, Mono: bpf.Now, Wall: time.Now,
		Stacks: tr, IO: tr, Log: logrus.NewEntry(log),
	}, tr, rec)
	if err != nil {
		t.Fatal(err)
	}

	tid := make(chan int32, 1)
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
		tid <- int32(unix.Gettid())
		for off := int64(0); err == nil; off += 4096 {
			select {
			case <-stop:
				leave()
				finished <- nil
				return
			default:
			}
			err = r.ReadAt(4096, off)
		}
		leave()
		finished <- err
	}()
	reader := <-tid
	if reader == 0 {
		t.Fatal(<-finished)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}

	var dRows, withDev int
	var longest int64
	for _, tk := range rec.ticks {
		row, ok := tk.rows[reader]
		if !ok || row.Seeded {
			continue
		}
		if row.IODev != "" {
			if row.IODev != slow.Name || row.IOOp != "read" || row.IOBytes != 4096 {
				t.Errorf("reader's row: io_dev %q io_op %q io_bytes %d; want %s read 4096",
					row.IODev, row.IOOp, row.IOBytes, slow.Name)
			}
			if row.IOQueueUs < 0 || row.IOQueueUs > row.IOUs {
				t.Errorf("io_queue_us %d outside 0..io_us %d", row.IOQueueUs, row.IOUs)
			}
			// The request was made inside the pread in progress.
			if row.Syscall == "pread64" && row.SyscallUs != state.Unknown && row.IOUs > row.SyscallUs {
				t.Errorf("io_us %d is longer than the pread64 it was made in (%d µs)", row.IOUs, row.SyscallUs)
			}
			longest = max(longest, row.IOUs)
		}
		if row.State == state.Uninterruptible {
			dRows++
			if row.IODev == slow.Name {
				withDev++
			} else {
				t.Errorf("reader in D state at %s without its request: io_dev %q", row.Time.Format(time.StampMicro), row.IODev)
			}
		}
	}
	t.Logf("reader %d: %d rows in D state, %d with io_dev %s; longest io_us %d (a read every %v)",
		reader, dRows, withDev, slow.Name, longest, time.Second/iops)
	if dRows < 10 {
		t.Fatalf("only %d rows of the reader in D state", dRows)
	}
	// Reads a second apart: a tick in the second half of one sees it in flight for half a
	// second or more.
	if want := int64(time.Second/iops/time.Microsecond) / 2; longest < want {
		t.Errorf("longest io_us %d, want at least %d: the device holds each read about %v", longest, want, time.Second/iops)
	}
}

// ioRecorder is a sink that keeps each minute's block I/O too.
type ioRecorder struct {
	recorder
	minutes map[time.Time][]state.DiskIO
}

func (r *ioRecorder) WriteIO(minute time.Time, disks []state.DiskIO) error {
	r.minutes[minute] = append(r.minutes[minute], disks...)
	return nil
}

func (r *ioRecorder) requests(minute time.Time, disk string, op state.IOOp) uint64 {
	for _, d := range r.minutes[minute] {
		if d.Disk == disk && d.Op == op {
			return d.Requests
		}
	}
	return 0
}

// A minute's read requests of a loop device only the test uses are the kernel's count
// (/sys/block/DEV/stat) exactly, and of the disk of the temp dir, shared with the
// machine, within 1%. A disk removed is then forgotten.
func TestIOMinutesMatchDiskStat(t *testing.T) {
	privileged.Require(t)
	tr, err := bpf.Open(bpf.Config{IO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	log := logrus.New()
	log.SetOutput(io.Discard)
	rec := &ioRecorder{recorder: recorder{t: t}, minutes: map[time.Time][]state.DiskIO{}}
	s, err := sampler.New(sampler.Config{
		Interval: time.Second, Self: -1, Mono: bpf.Now, Wall: time.Now,
		IO: tr, Log: logrus.NewEntry(log),
	}, tr, rec)
	if err != nil {
		t.Fatal(err)
	}
	// Ticks labelled a minute apart, however long the reads take.
	m0 := time.Now().Truncate(time.Minute).Add(-time.Hour)
	// The first minute holds what completed since the kernel side was loaded: the
	// devices' making and the machine's own I/O meanwhile. The minute checked is the next.
	if err := s.Tick(m0.Add(-time.Minute + time.Second)); err != nil {
		t.Fatal(err)
	}
	loop := blockdev.LoopFile(t, 64<<20)
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	root := blockdev.DiskOf(t, unix.Major(st.Dev), unix.Minor(st.Dev))
	if root == "" {
		t.Skipf("%s is not on a block device", dir)
	}
	disk := blockdev.ByName(t, root)
	file := blockdev.WrittenFile(t, dir, 64<<20)

	// The machine's own I/O goes on while a tick reads: the disk's counts are read before
	// and after each tick, and the minute's count must lie between the least and the most
	// they allow, within 1%.
	loopBefore, diskEarly := blockdev.ReadStat(t, loop), blockdev.ReadStat(t, disk)
	if err := s.Tick(m0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	diskLate := blockdev.ReadStat(t, disk)
	lr := blockdev.OpenDirect(t, loop.Path(), 4096)
	dr := blockdev.OpenDirect(t, file, 4096)
	for i := range 3000 {
		off := int64(i*7919%16384) * 4096
		if err := lr.ReadAt(4096, off); err != nil {
			t.Fatal(err)
		}
		if err := dr.ReadAt(4096, off); err != nil {
			t.Fatal(err)
		}
	}
	diskEnd := blockdev.ReadStat(t, disk)
	if err := s.Tick(m0.Add(time.Minute + time.Second)); err != nil {
		t.Fatal(err)
	}
	loopReads := blockdev.ReadStat(t, loop).Reads - loopBefore.Reads
	least, most := diskEnd.Reads-diskLate.Reads, blockdev.ReadStat(t, disk).Reads-diskEarly.Reads
	gotLoop, gotDisk := rec.requests(m0, loop.Name, state.IORead), rec.requests(m0, disk.Name, state.IORead)
	t.Logf("minute %s: %s %d read requests, /sys/block stat %d; %s %d, stat %d to %d",
		m0.Format("15:04"), loop.Name, gotLoop, loopReads, disk.Name, gotDisk, least, most)
	if !blockdev.CountedAll(gotLoop, loopReads) || loopReads < 3000 {
		t.Errorf("%s: %d read requests in the minute, /sys/block/%s/stat %d (3000 made)", loop.Name, gotLoop, loop.Name, loopReads)
	}
	if least < 3000 || float64(gotDisk) < 0.99*float64(least) || float64(gotDisk) > 1.01*float64(most) {
		t.Errorf("%s: %d read requests in the minute, /sys/block/%s/stat %d to %d: more than 1%% outside",
			disk.Name, gotDisk, disk.Name, least, most)
	}

	lr.Close()
	blockdev.RemoveLoop(t, loop)
	if err := s.Tick(m0.Add(2*time.Minute + time.Second)); err != nil {
		t.Fatal(err)
	}
	stats, err := tr.IOStats()
	if err != nil {
		t.Fatal(err)
	}
	for k := range stats {
		if k.Dev == state.Dev(loop.Dev()) {
			t.Errorf("statistics of removed %s still kept: %+v", loop.Name, k)
		}
	}
}
