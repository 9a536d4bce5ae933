// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultCgroupRoot is where the cgroup v2 hierarchy is mounted on unified-hierarchy hosts.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// Cgroup2Mount is where the cgroup v2 hierarchy is mounted, from procRoot/self/mountinfo:
// /sys/fs/cgroup on most hosts, /sys/fs/cgroup/unified on hybrid (v1 + v2) ones.
// DefaultCgroupRoot when no cgroup2 mount is found.
func Cgroup2Mount(procRoot string) string {
	f, err := os.Open(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return DefaultCgroupRoot
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "id parent major:minor root mountpoint options [optional...] - fstype source ..."
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return DefaultCgroupRoot
}

// Cgroups turns the cgroup ids the kernel side records into cgroup v2 paths. A path is
// read once per cgroup, from /proc of the first thread seen in it, not once per thread or
// tick. Cgroup ids are never reused on 64-bit kernels, so an entry stays right until the
// cgroup is gone; entries no row has needed for a while are dropped.
type Cgroups struct {
	procRoot, cgroupRoot string
	paths                map[uint64]*cgroupPath
	swept                time.Time
}

type cgroupPath struct {
	path string
	used time.Time
}

// NewCgroups reads cgroup paths from /proc at procRoot and checks them against the
// cgroup v2 hierarchy mounted at cgroupRoot.
func NewCgroups(procRoot, cgroupRoot string) *Cgroups {
	return &Cgroups{procRoot: procRoot, cgroupRoot: cgroupRoot, paths: map[uint64]*cgroupPath{}}
}

// Path is the cgroup v2 path of cgroup id, which thread tid of pid was last seen in; ""
// when it cannot be told (the thread has exited, or moved since).
func (c *Cgroups) Path(id uint64, pid, tid int32, now time.Time) string {
	if id == 0 {
		return ""
	}
	if p, ok := c.paths[id]; ok {
		p.used = now
		return p.path
	}
	path, ok := c.read(id, pid, tid)
	if !ok {
		return ""
	}
	c.paths[id] = &cgroupPath{path: path, used: now}
	return path
}

// read reads the thread's cgroup v2 path and checks that the directory there is cgroup id
// (its inode), as the thread may have moved since the kernel side recorded the id.
func (c *Cgroups) read(id uint64, pid, tid int32) (string, bool) {
	f, err := os.Open(filepath.Join(c.procRoot, strconv.Itoa(int(pid)), "task", strconv.Itoa(int(tid)), "cgroup"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	path, ok := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The unified hierarchy's line is "0::/path"; v1 hierarchies have other ids.
		if p, found := strings.CutPrefix(sc.Text(), "0::"); found {
			path, ok = p, true
		}
	}
	if !ok {
		return "", false
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(c.cgroupRoot, path), &st); err == nil && st.Ino != id {
		return "", false
	}
	// Not found at all: cgroupfs is mounted elsewhere (or not in this mount namespace);
	// the path is still what the kernel reports, so it is kept unchecked.
	return path, true
}

// Expire forgets cgroups no row has needed for IdleProcess, at most once a minute.
func (c *Cgroups) Expire(now time.Time) {
	if SweepDue(&c.swept, now) {
		maps.DeleteFunc(c.paths, func(_ uint64, p *cgroupPath) bool { return Idle(now, p.used) })
	}
}
