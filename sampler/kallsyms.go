// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// kernelSymbols resolves kernel text addresses to function names, from /proc/kallsyms.
type kernelSymbols struct {
	addrs []uint64 // sorted
	names []string
	// The scheduler's own functions (__sched): the kernel's get_wchan skips them too.
	schedStart, schedEnd uint64
}

// errNoAddresses means kallsyms showed every address as 0 (kptr_restrict).
var errNoAddresses = errors.New("kallsyms shows no addresses: run threadcap as root, " +
	"or with CAP_SYSLOG, and kernel.kptr_restrict below 2")

// readKallsyms reads the text symbols (core kernel, modules and BPF programs alike).
func readKallsyms(path string) (*kernelSymbols, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading kernel symbols: %w", err)
	}
	defer f.Close()
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	k := &kernelSymbols{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ffffffff81000000 T _stext" or "ffffffffc0a01000 t xfs_buf_read\t[xfs]"
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		switch fields[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		switch fields[2] {
		case "__sched_text_start":
			k.schedStart = addr
		case "__sched_text_end":
			k.schedEnd = addr
		}
		syms = append(syms, sym{addr, fields[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kernel symbols: %w", err)
	}
	if len(syms) == 0 {
		return nil, errNoAddresses
	}
	// Module and BPF symbols follow the core kernel's, out of order.
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	k.addrs = make([]uint64, len(syms))
	k.names = make([]string, len(syms))
	for i, s := range syms {
		k.addrs[i], k.names[i] = s.addr, s.name
	}
	return k, nil
}

// name is the function ip is in: the nearest symbol at or below it.
func (k *kernelSymbols) name(ip uint64) string {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > ip })
	if i == 0 {
		return "0x" + strconv.FormatUint(ip, 16)
	}
	return k.names[i-1]
}

// inScheduler reports whether ip is in the scheduler's own functions.
func (k *kernelSymbols) inScheduler(ip uint64) bool {
	return ip >= k.schedStart && ip < k.schedEnd
}

// waitFrames drops, from a stack taken at a switch-out (innermost first), the frames of
// the hook itself and the scheduler's, leaving the stack of what the thread waits in: its
// first frame is the wait channel, as /proc/PID/wchan would name it.
func (k *kernelSymbols) waitFrames(ips []uint64) []uint64 {
	first := -1
	for i, ip := range ips {
		if k.inScheduler(ip) {
			first = i
			break
		}
	}
	if first < 0 {
		return ips // not a stack from the scheduler: keep it whole
	}
	i := first
	for i < len(ips) && k.inScheduler(ips[i]) {
		i++
	}
	return ips[i:]
}
