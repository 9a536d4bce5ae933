// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/ianlancetaylor/demangle"
	"github.com/prometheus/procfs"

	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
)

// fileID identifies a mapped file's contents: a file replaced in place changes mtime.
type fileID struct {
	dev, ino uint64
	mtime    int64
}

// procUser is one process's address space, as far as its stacks needed it.
type procUser struct {
	execGen uint32
	maps    []*procfs.ProcMap // sorted by start; read when a stack needs them
	byID    map[uint16]*state.Stack
	used    time.Time
	// perf is its perf map (JIT code), looked for at its first frame in anonymous memory;
	// perfRead says it was.
	perf     *perfMap
	perfRead bool
}

// UserStacks symbolizes user-space stacks: per process, as the same addresses mean other
// functions in another address space, and once per stack id and process. Symbol tables
// are read once per file (by device, inode and mtime), shared by every process mapping it.
type UserStacks struct {
	src      StackReader
	procRoot string
	fs       procfs.FS
	procs    map[int32]*procUser
	files    map[fileID]*fileSymbols
	swept    time.Time
}

type fileSymbols struct {
	syms *elfSymbols // nil: not an ELF file threadcap can read
	used time.Time
}

// NewUserStacks symbolizes the user stacks src reads, with the maps and mapped files of
// the processes under procRoot.
func NewUserStacks(src StackReader, procRoot string) (*UserStacks, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, err
	}
	return &UserStacks{src: src, procRoot: procRoot, fs: fs, procs: map[int32]*procUser{},
		files: map[fileID]*fileSymbols{}}, nil
}

// Get returns user stack id of th's process, symbolized; nil when it cannot be read.
func (u *UserStacks) Get(th *state.Thread, now time.Time) *state.Stack {
	p := u.procs[th.Pid]
	if p == nil || p.execGen != th.ExecGen {
		p = &procUser{execGen: th.ExecGen, byID: map[uint16]*state.Stack{}}
		u.procs[th.Pid] = p
	}
	p.used = now
	if st, ok := p.byID[th.UserStack]; ok {
		return st
	}
	ips, err := u.src.Stack(th.UserStack)
	if err != nil || len(ips) == 0 {
		return nil
	}
	frames := make([]string, len(ips))
	for i, ip := range ips {
		frames[len(ips)-1-i] = u.frame(th.Pid, p, ip, now)
	}
	st := state.NewStack(frames)
	p.byID[th.UserStack] = st
	return st
}

// frame names the function at ip in process pid: its symbol (C++ and Rust names
// demangled, without their parameters), the process's perf map's name for code it
// generated (JIT), or, when nothing names it, where it is: the file's name and the offset
// in it ("libc.so.6+0x2a1c0"), the mapping's ("[anon]+0x1f40", "[stack]+0x10"), or the
// address itself. A frame is never dropped.
func (u *UserStacks) frame(pid int32, p *procUser, ip uint64, now time.Time) string {
	m := p.mapping(ip)
	if m == nil {
		// Mapped since the maps were read (a library loaded later): read them again.
		p.maps = u.readMaps(pid)
		if m = p.mapping(ip); m == nil {
			return fmt.Sprintf("%#x", ip)
		}
	}
	off := ip - uint64(m.StartAddr) + uint64(m.Offset)
	if m.Pathname == "" || m.Pathname[0] == '[' {
		if !p.perfRead {
			p.perf, p.perfRead = newPerfMap(u.procRoot, pid), true
		}
		if p.perf != nil {
			if name := p.perf.name(ip); name != "" {
				return name
			}
		}
		module := m.Pathname
		if module == "" {
			module = "[anon]"
		}
		return fmt.Sprintf("%s+%#x", module, ip-uint64(m.StartAddr))
	}
	if syms := u.symbols(pid, m, now); syms != nil {
		if name := syms.name(off); name != "" {
			return demangled(name)
		}
	}
	return fmt.Sprintf("%s+%#x", filepath.Base(m.Pathname), off)
}

// demangled is a C++ or Rust symbol's name as its source says it, without parameters
// (templates kept: "std::vector<int>::push_back"); any other name as it is.
func demangled(name string) string {
	return demangle.Filter(name, demangle.NoParams)
}

func (p *procUser) mapping(ip uint64) *procfs.ProcMap {
	i := sort.Search(len(p.maps), func(i int) bool { return uint64(p.maps[i].EndAddr) > ip })
	if i < len(p.maps) && uint64(p.maps[i].StartAddr) <= ip {
		return p.maps[i]
	}
	return nil
}

func (u *UserStacks) readMaps(pid int32) []*procfs.ProcMap {
	proc, err := u.fs.Proc(int(pid))
	if err != nil {
		return nil
	}
	maps, err := proc.ProcMaps()
	if err != nil {
		return nil
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].StartAddr < maps[j].StartAddr })
	return maps
}

// symbols reads the mapped file through /proc/PID/map_files, which reaches it whatever the
// process's mount namespace, and even once deleted (an upgraded package).
func (u *UserStacks) symbols(pid int32, m *procfs.ProcMap, now time.Time) *elfSymbols {
	path := filepath.Join(u.procRoot, strconv.Itoa(int(pid)), "map_files",
		fmt.Sprintf("%x-%x", m.StartAddr, m.EndAddr))
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil
	}
	id := fileID{uint64(st.Dev), st.Ino, st.Mtim.Nano()}
	f := u.files[id]
	if f == nil {
		syms, _ := readELFSymbols(path)
		f = &fileSymbols{syms: syms}
		u.files[id] = f
	}
	f.used = now
	return f.syms
}

// Forget drops what was cached for stack id, which the kernel side may reuse.
func (u *UserStacks) Forget(id uint16) {
	for _, p := range u.procs {
		delete(p.byID, id)
	}
}

// Exited forgets a process whose main thread has exited.
func (u *UserStacks) Exited(pid int32) { delete(u.procs, pid) }

// Expire forgets processes and symbol tables no stack needed for procinfo.IdleProcess, at most
// once a minute.
func (u *UserStacks) Expire(now time.Time) {
	if procinfo.SweepDue(&u.swept, now) {
		maps.DeleteFunc(u.procs, func(_ int32, p *procUser) bool { return procinfo.Idle(now, p.used) })
		maps.DeleteFunc(u.files, func(_ fileID, f *fileSymbols) bool { return procinfo.Idle(now, f.used) })
	}
}
