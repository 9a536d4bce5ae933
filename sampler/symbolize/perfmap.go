// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// perfMap names code a process generated at run time (JIT compilers, interpreters' own
// trampolines), from the file it writes for profilers: /tmp/perf-PID.map, one line per
// function, "START SIZE NAME" with START and SIZE in hex (Node.js with --perf-basic-prof,
// Python 3.12+ with -X perf, the JVM's and .NET's perf map agents). The file only grows,
// so it is read again when it has grown and an address is not in what was read.
type perfMap struct {
	path   string // through /proc/PID/root: the file in the process's mount namespace
	size   int64  // the file's size when read
	starts []uint64
	ends   []uint64
	names  []string
}

// newPerfMap is the perf map of process pid under procRoot; its pid inside its own pid
// namespace names the file. Nil when the process has none.
func newPerfMap(procRoot string, pid int32) *perfMap {
	nspid := strconv.Itoa(int(pid))
	if status, err := os.ReadFile(filepath.Join(procRoot, nspid, "status")); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
				nspid = f[len(f)-1]
			}
		}
	}
	m := &perfMap{path: filepath.Join(procRoot, strconv.Itoa(int(pid)), "root", "tmp", "perf-"+nspid+".map")}
	if !m.read() {
		return nil
	}
	return m
}

// read reads the file if it has grown; false when it cannot be read.
func (m *perfMap) read() bool {
	st, err := os.Stat(m.path)
	if err != nil {
		return false
	}
	if st.Size() == m.size {
		return true
	}
	data, err := os.ReadFile(m.path)
	if err != nil {
		return false
	}
	m.size = int64(len(data))
	m.parse(data)
	return true
}

// parse keeps the functions of data, sorted by start; a later line for the same start
// (code moved, or recompiled in place) wins.
func (m *perfMap) parse(data []byte) {
	type fn struct {
		start, end uint64
		name       string
	}
	byStart := map[uint64]fn{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			continue
		}
		start, err1 := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64)
		size, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if err1 != nil || err2 != nil || size == 0 {
			continue
		}
		byStart[start] = fn{start, start + size, f[2]}
	}
	fns := make([]fn, 0, len(byStart))
	for _, f := range byStart {
		fns = append(fns, f)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].start < fns[j].start })
	m.starts, m.ends, m.names = m.starts[:0], m.ends[:0], m.names[:0]
	for _, f := range fns {
		m.starts, m.ends, m.names = append(m.starts, f.start), append(m.ends, f.end), append(m.names, f.name)
	}
}

// name is the function at ip, "" when the map has none there even once read again.
func (m *perfMap) name(ip uint64) string {
	if n := m.lookup(ip); n != "" {
		return n
	}
	if size := m.size; m.read() && m.size != size {
		return m.lookup(ip)
	}
	return ""
}

func (m *perfMap) lookup(ip uint64) string {
	i := sort.Search(len(m.starts), func(i int) bool { return m.starts[i] > ip })
	if i == 0 || ip >= m.ends[i-1] {
		return ""
	}
	return m.names[i-1]
}
