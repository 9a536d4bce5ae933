// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"maps"
	"os/user"
	"strconv"
	"time"

	"github.com/prometheus/procfs"

	"github.com/threadcap/threadcap/state"
)

// process is what a row says about a thread's process, read from /proc once per process
// (and again after it execs), not at every tick.
type process struct {
	name, exe, user, cgroup string
	leaderStart             uint64 // the main thread's start time, when seen: tells a reused pid
	execGen                 uint32
	used                    time.Time
}

// processCache holds process context by pid.
type processCache struct {
	fs    procfs.FS
	procs map[int32]*process
	users map[uint64]string
	swept time.Time
}

// idleProcess is how long a process's context is kept without a row needing it.
const idleProcess = 5 * time.Minute

// sweepDue says whether a cache last swept at *last is to look for idle entries at now:
// at most once a minute, not at every tick. It records now as the last sweep when due.
func sweepDue(last *time.Time, now time.Time) bool {
	if now.Sub(*last) < time.Minute {
		return false
	}
	*last = now
	return true
}

// idle says whether an entry last used at used is to be forgotten at now.
func idle(now, used time.Time) bool { return now.Sub(used) > idleProcess }

func newProcessCache(root string) (*processCache, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	return &processCache{fs: fs, procs: map[int32]*process{}, users: map[uint64]string{}}, nil
}

// get returns th's process context, reading it when the process is new, has exec'd, or
// its pid now belongs to another process (the main thread's start time differs).
func (c *processCache) get(th *state.Thread, now time.Time) *process {
	p := c.procs[th.Pid]
	leader := th.Tid == th.Pid && !th.Seeded
	stale := p == nil || (leader && (p.leaderStart != th.StartNs || p.execGen != th.ExecGen))
	if stale {
		p = c.read(th)
		c.procs[th.Pid] = p
	}
	p.used = now
	return p
}

func (c *processCache) read(th *state.Thread) *process {
	p := &process{execGen: th.ExecGen}
	if th.Tid == th.Pid && !th.Seeded {
		p.leaderStart = th.StartNs
	}
	proc, err := c.fs.Proc(int(th.Pid))
	if err != nil {
		// Gone already: the thread's own name is all there is.
		if th.Tid == th.Pid {
			p.name = th.Name()
		}
		return p
	}
	if p.name, err = proc.Comm(); err != nil && th.Tid == th.Pid {
		p.name = th.Name()
	}
	p.exe, _ = proc.Executable()
	if st, err := proc.NewStatus(); err == nil {
		p.user = c.userName(st.UIDs[0])
	}
	if cgs, err := proc.Cgroups(); err == nil {
		for _, cg := range cgs {
			if cg.HierarchyID == 0 {
				p.cgroup = cg.Path
			}
		}
	}
	return p
}

// userName resolves a uid once; an unknown uid is shown as its number.
func (c *processCache) userName(uid uint64) string {
	if name, ok := c.users[uid]; ok {
		return name
	}
	name := strconv.FormatUint(uid, 10)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	c.users[uid] = name
	return name
}

// exited forgets a process whose main thread has exited.
func (c *processCache) exited(th *state.Thread) {
	if th.Tid == th.Pid {
		delete(c.procs, th.Pid)
	}
}

// expire forgets processes no row has needed for a while, at most once a minute.
func (c *processCache) expire(now time.Time) {
	if sweepDue(&c.swept, now) {
		maps.DeleteFunc(c.procs, func(_ int32, p *process) bool { return idle(now, p.used) })
	}
}
