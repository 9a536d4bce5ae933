// SPDX-License-Identifier: Apache-2.0

// Package procinfo is what the sampler's rows say about a thread beyond its record, read
// from /proc (and cgroupfs) once and cached: its process's name, executable, user and
// cgroup, the path of its cgroup, and what the descriptor it waits on is.
package procinfo

import (
	"maps"
	"os/user"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/procfs"

	"github.com/threadcap/threadcap/state"
)

// Process is what a row says about a thread's process, read from /proc once per process
// (and again after it execs), not at every tick.
type Process struct {
	Name, Exe, User, Cgroup string
	// Cmdline is the command line, arguments joined by spaces, at most MaxCmdline bytes.
	// A process may rewrite it (PostgreSQL's backends show their state there), so it is
	// read again once it is CmdlineRefresh old.
	Cmdline     string
	cmdlineRead time.Time
	leaderStart uint64 // the main thread's start time, when seen: tells a reused pid
	execGen     uint32
	used        time.Time
}

// MaxCmdline bounds the command line kept per process.
const MaxCmdline = 256

// CmdlineRefresh is how old a command line gets before it is read again: a /proc read
// per process with rows every 5 s at most, not per row and tick.
const CmdlineRefresh = 5 * time.Second

// Processes holds process context by pid.
type Processes struct {
	fs    procfs.FS
	procs map[int32]*Process
	users map[uint64]string
	swept time.Time
}

// IdleProcess is how long a process's context is kept without a row needing it.
const IdleProcess = 5 * time.Minute

// SweepDue says whether a cache last swept at *last is to look for idle entries at now:
// at most once a minute, not at every tick. It records now as the last sweep when due.
func SweepDue(last *time.Time, now time.Time) bool {
	if now.Sub(*last) < time.Minute {
		return false
	}
	*last = now
	return true
}

// Idle says whether an entry last used at used is to be forgotten at now.
func Idle(now, used time.Time) bool { return now.Sub(used) > IdleProcess }

// NewProcesses reads process context from the proc filesystem at root.
func NewProcesses(root string) (*Processes, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	return &Processes{fs: fs, procs: map[int32]*Process{}, users: map[uint64]string{}}, nil
}

// Get returns th's process context, reading it when the process is new, has exec'd, or
// its pid now belongs to another process (the main thread's start time differs).
func (c *Processes) Get(th *state.Thread, now time.Time) *Process {
	p := c.procs[th.Pid]
	leader := th.Tid == th.Pid && !th.Seeded
	stale := p == nil || (leader && (p.leaderStart != th.StartNs || p.execGen != th.ExecGen))
	if stale {
		p = c.read(th)
		c.procs[th.Pid] = p
	}
	if now.Sub(p.cmdlineRead) >= CmdlineRefresh {
		p.Cmdline, p.cmdlineRead = c.cmdline(th.Pid), now
	}
	p.used = now
	return p
}

func (c *Processes) read(th *state.Thread) *Process {
	p := &Process{execGen: th.ExecGen}
	if th.Tid == th.Pid && !th.Seeded {
		p.leaderStart = th.StartNs
	}
	proc, err := c.fs.Proc(int(th.Pid))
	if err != nil {
		// Gone already: the thread's own name is all there is.
		if th.Tid == th.Pid {
			p.Name = th.Name()
		}
		return p
	}
	if p.Name, err = proc.Comm(); err != nil && th.Tid == th.Pid {
		p.Name = th.Name()
	}
	p.Exe, _ = proc.Executable()
	if st, err := proc.NewStatus(); err == nil {
		p.User = c.userName(st.UIDs[0])
	}
	if cgs, err := proc.Cgroups(); err == nil {
		for _, cg := range cgs {
			if cg.HierarchyID == 0 {
				p.Cgroup = cg.Path
			}
		}
	}
	return p
}

// cmdline reads a process's command line: its arguments, joined by spaces (a process
// that rewrote it into one string with trailing NULs or spaces loses them), cut at
// MaxCmdline bytes on a character boundary. "" for a kernel thread or a process gone.
func (c *Processes) cmdline(pid int32) string {
	proc, err := c.fs.Proc(int(pid))
	if err != nil {
		return ""
	}
	args, err := proc.CmdLine()
	if err != nil {
		return ""
	}
	return bound(strings.TrimRight(strings.Join(args, " "), " "), MaxCmdline)
}

// bound cuts s to at most n bytes without splitting a UTF-8 character.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// userName resolves a uid once; an unknown uid is shown as its number.
func (c *Processes) userName(uid uint64) string {
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

// Exited forgets a process whose main thread has exited.
func (c *Processes) Exited(th *state.Thread) {
	if th.Tid == th.Pid {
		delete(c.procs, th.Pid)
	}
}

// Expire forgets processes no row has needed for a while, at most once a minute.
func (c *Processes) Expire(now time.Time) {
	if SweepDue(&c.swept, now) {
		maps.DeleteFunc(c.procs, func(_ int32, p *Process) bool { return Idle(now, p.used) })
	}
}
