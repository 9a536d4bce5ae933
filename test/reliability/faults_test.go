// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiskFullMidHour lets threadcap fill a small tmpfs to the last byte (no free-space
// floor): it keeps running, says so once, and resumes when the file system grows; the
// file stays valid CSV throughout.
func TestDiskFullMidHour(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	mount(t, "tmpfs", dir, "tmpfs", "size=256k")
	d := startDaemon(t, "--config", noFloorConfig(t, tmp), "--hz", "20", "--all", "--pid", strconv.Itoa(os.Getpid()), "--dir", dir)
	waitLog(t, d, "out of disk space: dropping rows until space is freed")
	readHours(t, dir)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT, "size=4m"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, "disk space is back: writing rows again")
	waitRows(t, dir, 256<<10)
	d.Stop(t)
	rows := readHours(t, dir)
	if n := strings.Count(d.Log.String(), "out of disk space"); n != 1 {
		t.Errorf("running out of space was logged %d times, want once:\n%s", n, d.Log)
	}
	t.Logf("%d rows, all valid, after filling 256 KiB and growing to 4 MiB", len(rows))
}

// TestReadOnlyMidHour makes the data directory's ext4 file system fail and go read-only
// under threadcap, as errors=remount-ro does on a disk error (a plain remount,ro is refused
// while a file is open for writing). threadcap keeps running and says so; once the broken
// file system is detached, it writes again to the directory under it; and the rows written
// before the failure are still valid CSV once the file system is checked.
func TestReadOnlyMidHour(t *testing.T) {
	tmp := t.TempDir()
	image, dir := filepath.Join(tmp, "ext4.img"), filepath.Join(tmp, "data")
	run(t, "truncate", "-s", "16M", image)
	run(t, "mkfs.ext4", "-q", "-F", image)
	mount(t, image, dir, "", "loop,errors=remount-ro")
	dev := filepath.Base(strings.TrimSpace(run(t, "findmnt", "-no", "SOURCE", dir)))

	// Synced at every tick, so that rows written before the failure are on the disk: a
	// failing ext4 drops what it had not written back.
	config := noFloorConfig(t, tmp, "fsync_interval: 50ms")
	d := startDaemon(t, "--config", config, "--hz", "20", "--all", "--pid", strconv.Itoa(os.Getpid()), "--dir", dir)
	waitRows(t, dir, 8192)
	if err := os.WriteFile("/sys/fs/ext4/"+dev+"/trigger_fs_error", []byte("threadcap reliability test"), 0); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, "output file system is read-only")
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, "output file system is writable again")
	waitRows(t, dir, 1024)
	d.Stop(t)
	after := readHours(t, dir)

	// Exit status 1 means errors were corrected, which a failed file system has.
	if out, err := exec.Command("e2fsck", "-fy", image).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck: %v\n%s", err, out)
		}
	}
	checked := filepath.Join(tmp, "checked")
	mount(t, image, checked, "", "loop,ro")
	before := readHours(t, checked)
	if len(before) == 0 {
		t.Error("no synced row survived the file system's failure")
	}
	t.Logf("%d rows before the file system failed, %d after it was detached", len(before), len(after))
}

// noFloorConfig writes a config without the default free-space floor (1 GiB, more than
// these small file systems hold), and with the given extra output settings, and returns
// its path.
func noFloorConfig(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	path := filepath.Join(dir, "threadcap.yaml")
	yaml := "output:\n  min_free_bytes: 0\n"
	for _, e := range extra {
		yaml += "  " + e + "\n"
	}
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mount mounts source on dir (created) for the rest of the test.
func mount(t *testing.T, source, dir, fstype, opts string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if fstype == "" {
		run(t, "mount", "-o", opts, source, dir)
	} else if err := unix.Mount(source, dir, fstype, 0, opts); err != nil {
		t.Fatalf("mounting %s on %s: %v", source, dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// run runs a command the test needs and returns its output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
