// SPDX-License-Identifier: Apache-2.0

// Package blockdev gives privileged tests real block devices to do I/O on: loop devices
// over temporary files, a slow one (a loop device over another whose reads a cgroup
// throttles), O_DIRECT reads of known sizes, and the kernel's own counts from
// /sys/block/DEV/stat. Everything is removed when the test ends, also when it fails.
package blockdev

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is a block device by its name (as lsblk and /sys/block name it) and number.
type Device struct {
	Name         string // loop3, vda
	Major, Minor uint32
}

// Path is the device node.
func (d Device) Path() string { return "/dev/" + d.Name }

// Dev is the device number as the kernel keeps it (major << 20 | minor).
func (d Device) Dev() uint32 { return d.Major<<20 | d.Minor }

// ByName reads a disk's numbers from /sys/block/NAME/dev.
func ByName(t testing.TB, name string) Device {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/block", name, "dev"))
	if err != nil {
		t.Fatalf("no disk %s: %v", name, err)
	}
	var d Device
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d:%d", &d.Major, &d.Minor); err != nil {
		t.Fatalf("reading /sys/block/%s/dev: %v", name, err)
	}
	d.Name = name
	return d
}

// Loop attaches a loop device with direct I/O over backing (a file or another device)
// and detaches it when the test ends.
func Loop(t testing.TB, backing string) Device {
	t.Helper()
	out, err := exec.Command("losetup", "--find", "--show", "--direct-io=on", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup %s: %v: %s (losetup is in util-linux)", backing, err, out)
	}
	d := ByName(t, filepath.Base(strings.TrimSpace(string(out))))
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join("/sys/block", d.Name, "loop")); err != nil {
			return // removed by the test
		}
		if out, err := exec.Command("losetup", "--detach", d.Path()).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", d.Path(), err, out)
		}
	})
	return d
}

// RemoveLoop detaches loop device d and removes it from the machine (LOOP_CTL_REMOVE):
// its /sys/block and /sys/dev/block entries go, as an unplugged disk's do.
func RemoveLoop(t testing.TB, d Device) {
	t.Helper()
	if out, err := exec.Command("losetup", "--detach", d.Path()).CombinedOutput(); err != nil {
		t.Fatalf("losetup --detach %s: %v: %s", d.Path(), err, out)
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	const loopCtlRemove = 0x4C81
	var err2 error
	// The detach completes asynchronously: the device is busy for a moment.
	for range 100 {
		if err2 = unix.IoctlSetInt(int(ctl.Fd()), loopCtlRemove, int(d.Minor)); err2 != unix.EBUSY {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err2 != nil {
		t.Fatalf("removing %s: %v", d.Name, err2)
	}
}

// LoopFile attaches a loop device over a new file of size bytes in the test's temp dir.
func LoopFile(t testing.TB, size int64) Device {
	t.Helper()
	file := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return Loop(t, file)
}

// Throttle makes a cgroup (v1 blkio, as the test machines mount it) whose threads may
// read dev at most iops times a second, and removes it when the test ends. Loop devices
// read their backing device in the cgroup of the request's submitter, so a loop device
// over dev is slow for them at the device: its requests are in flight while throttled.
func Throttle(t testing.TB, dev Device, iops int) *Cgroup {
	t.Helper()
	root := "/sys/fs/cgroup/blkio"
	if _, err := os.Stat(filepath.Join(root, "blkio.throttle.read_iops_device")); err != nil {
		t.Fatalf("no cgroup v1 blkio hierarchy with throttling at %s: %v", root, err)
	}
	dir, err := os.MkdirTemp(root, "threadcap-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Threads leave with the test's end; their cgroup goes once it is empty.
		_ = os.WriteFile(filepath.Join(dir, "blkio.throttle.read_iops_device"), fmt.Appendf(nil, "%d:%d 0", dev.Major, dev.Minor), 0)
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing cgroup %s: %v", dir, err)
		}
	})
	limit := fmt.Sprintf("%d:%d %d", dev.Major, dev.Minor, iops)
	if err := os.WriteFile(filepath.Join(dir, "blkio.throttle.read_iops_device"), []byte(limit), 0); err != nil {
		t.Fatalf("setting %s in %s: %v", limit, dir, err)
	}
	return &Cgroup{dir: dir}
}

// Cgroup is a blkio cgroup of Throttle.
type Cgroup struct{ dir string }

// Join moves the calling OS thread into the cgroup (and back to the root when the
// returned function is called). The goroutine must be locked to its thread.
func (c *Cgroup) Join() (leave func(), err error) {
	tid := strconv.Itoa(unix.Gettid())
	if err := os.WriteFile(filepath.Join(c.dir, "tasks"), []byte(tid), 0); err != nil {
		return nil, fmt.Errorf("moving thread %s into %s: %w", tid, c.dir, err)
	}
	return func() {
		_ = os.WriteFile(filepath.Join(filepath.Dir(c.dir), "tasks"), []byte(tid), 0)
	}, nil
}

// Stat is /sys/block/DEV/stat: the kernel's counts of completed requests.
type Stat struct {
	Reads, ReadSectors, Writes, WriteSectors uint64
}

// ReadStat reads a disk's counts.
func ReadStat(t testing.TB, d Device) Stat {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/block", d.Name, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 7 {
		t.Fatalf("/sys/block/%s/stat: %q", d.Name, b)
	}
	n := func(i int) uint64 {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			t.Fatalf("/sys/block/%s/stat field %d: %v", d.Name, i+1, err)
		}
		return v
	}
	return Stat{Reads: n(0), ReadSectors: n(2), Writes: n(4), WriteSectors: n(6)}
}

// CountedAll says whether got, threadcap's count of a device's completed requests, is
// stat, the kernel's (/sys/block/DEV/stat), but for the completions the kernel does not
// show its programs: on 6.18 the program on block_rq_complete runs for about 1 in 100,000
// completions of a loop device fewer than the one on block_rq_issue, with no recursion
// miss counted (kernel.bpf_stats_enabled, 300,000 O_DIRECT reads of a loop device: 3 to 5
// runs fewer, the requests also missing from threadcap's count). 1 in 1,000 and one more
// are allowed: a stop or a minute that lost requests loses far more.
func CountedAll(got, stat uint64) bool {
	return got <= stat && stat-got <= 1+stat/1000
}

// DirectReader reads a device with O_DIRECT, so that every read is a request of its own.
type DirectReader struct {
	f   *os.File
	buf []byte
}

// OpenDirect opens a device or file for O_DIRECT reads of up to max bytes at a time.
func OpenDirect(t testing.TB, path string, max int) *DirectReader {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatalf("opening %s with O_DIRECT: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return &DirectReader{f: f, buf: aligned(max)}
}

// ReadAt reads size bytes at off (both multiples of 4096): one request.
func (r *DirectReader) ReadAt(size int, off int64) error {
	n, err := unix.Pread(int(r.f.Fd()), r.buf[:size], off)
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes of %d at %d", n, size, off)
	}
	runtime.KeepAlive(r.f)
	return err
}

// Close closes the file early (the test's end closes it otherwise).
func (r *DirectReader) Close() error { return r.f.Close() }

// aligned is a buffer at a 4096-byte boundary, as O_DIRECT wants.
func aligned(size int) []byte {
	const align = 4096
	b := make([]byte, size+align)
	skip := (align - int(uintptr(unsafe.Pointer(&b[0]))%align)) % align
	return b[skip : skip+size]
}

// DiskOf names the disk that holds device major:minor (itself, or a partition's disk);
// "" when it is not a block device.
func DiskOf(t testing.TB, major, minor uint32) string {
	t.Helper()
	link, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(link, "partition")); err == nil {
		link = filepath.Dir(link)
	}
	return filepath.Base(link)
}

// WrittenFile writes a file of size bytes in dir, every block of it, synced to its disk.
func WrittenFile(t testing.TB, dir string, size int) string {
	t.Helper()
	path := filepath.Join(dir, "written")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for written := 0; written < size; written += len(chunk) {
		if _, err := f.Write(chunk[:min(len(chunk), size-written)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return path
}
