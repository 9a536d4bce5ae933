// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestCgroup2Mount(t *testing.T) {
	proc := t.TempDir()
	os.Mkdir(filepath.Join(proc, "self"), 0o755)
	mountinfo := "35 24 0:30 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n" +
		"36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n" +
		"37 35 0:32 / /sys/fs/cgroup/cpu rw,nosuid shared:11 - cgroup cgroup rw,cpu\n"
	if err := os.WriteFile(filepath.Join(proc, "self", "mountinfo"), []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Cgroup2Mount(proc); got != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid host: cgroup2 found at %q, want /sys/fs/cgroup/unified", got)
	}
	if got := Cgroup2Mount(t.TempDir()); got != DefaultCgroupRoot {
		t.Errorf("no mountinfo: %q, want the default %s", got, DefaultCgroupRoot)
	}
}

// TestCgroupPathChecksTheID reads a thread's path once per cgroup id, and refuses a path
// whose directory is another cgroup (the thread moved after the id was recorded).
func TestCgroupPathChecksTheID(t *testing.T) {
	proc, cgroups := t.TempDir(), t.TempDir()
	task := filepath.Join(proc, "10", "task", "11")
	os.MkdirAll(task, 0o755)
	os.MkdirAll(filepath.Join(cgroups, "system.slice", "db.service"), 0o755)
	write := func(path string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(task, "cgroup"), []byte("4:memory:/x\n0::"+path+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(cgroups, "system.slice", "db.service"), &st); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := NewCgroups(proc, cgroups)
	write("/system.slice/db.service")
	if got := c.Path(st.Ino+1, 10, 11, now); got != "" {
		t.Errorf("a path whose directory is another cgroup was accepted: %q", got)
	}
	if got := c.Path(st.Ino, 10, 11, now); got != "/system.slice/db.service" {
		t.Errorf("cgroup %d: path %q, want /system.slice/db.service", st.Ino, got)
	}
	write("/elsewhere")
	if got := c.Path(st.Ino, 10, 11, now); got != "/system.slice/db.service" {
		t.Errorf("a known cgroup id was read again: %q", got)
	}
	c.Expire(now.Add(IdleProcess + 2*time.Minute))
	if len(c.paths) != 0 {
		t.Errorf("a cgroup no row needed for long is still cached")
	}
}
