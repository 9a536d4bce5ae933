// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// kernelSymbols resolves kernel text addresses to function names, from /proc/kallsyms.
// A kernel has some 100,000 text symbols: they are kept as one table of fixed-size entries
// and one buffer of names, not 100,000 strings, which took four times the memory, most of
// the daemon's.
type kernelSymbols struct {
	syms  []kernelSymbol // sorted by address
	names []byte         // every name, back to back
	// The scheduler's own functions (__sched): the kernel's get_wchan skips them too.
	schedStart, schedEnd uint64
}

// kernelSymbol is one symbol: its address and where its name lies in names.
type kernelSymbol struct {
	addr uint64
	off  uint32
	len  uint32
}

// errNoAddresses means kallsyms showed every address as 0 (kptr_restrict).
var errNoAddresses = errors.New("kallsyms shows no addresses: run threadcap as root, " +
	"or with CAP_SYSLOG, and kernel.kptr_restrict below 2")

// readKallsyms reads the text symbols (core kernel, modules and BPF programs alike). It
// reads the file twice, counting first, so that the table is allocated once at its size:
// growing it as lines come in allocated five times as much, which set the daemon's peak
// memory.
func readKallsyms(path string) (*kernelSymbols, error) {
	var n, size int
	if err := scanKallsyms(path, func(_ uint64, name []byte) { n, size = n+1, size+len(name) }); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errNoAddresses
	}
	// A module loaded between the two reads only makes the slices grow.
	k := &kernelSymbols{syms: make([]kernelSymbol, 0, n), names: make([]byte, 0, size)}
	err := scanKallsyms(path, func(addr uint64, name []byte) {
		switch string(name) {
		case "__sched_text_start":
			k.schedStart = addr
		case "__sched_text_end":
			k.schedEnd = addr
		}
		k.syms = append(k.syms, kernelSymbol{addr: addr, off: uint32(len(k.names)), len: uint32(len(name))})
		k.names = append(k.names, name...)
	})
	if err != nil {
		return nil, err
	}
	// Module and BPF symbols follow the core kernel's, out of order.
	slices.SortFunc(k.syms, func(a, b kernelSymbol) int { return cmp.Compare(a.addr, b.addr) })
	return k, nil
}

// scanKallsyms calls fn with each text symbol of the kallsyms file at path that has an
// address. name is only valid during the call.
func scanKallsyms(path string, fn func(addr uint64, name []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading kernel symbols: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ffffffff81000000 T _stext" or "ffffffffc0a01000 t xfs_buf_read\t[xfs]"
		hex, rest, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if !ok || len(rest) < 3 || rest[1] != ' ' {
			continue
		}
		switch rest[0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		addr, err := strconv.ParseUint(string(hex), 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		name, _, _ := bytes.Cut(rest[2:], []byte{'\t'})
		fn(addr, name)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading kernel symbols: %w", err)
	}
	return nil
}

// name is the function ip is in: the nearest symbol at or below it.
func (k *kernelSymbols) name(ip uint64) string {
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > ip })
	if i == 0 {
		return "0x" + strconv.FormatUint(ip, 16)
	}
	s := k.syms[i-1]
	return string(k.names[s.off : s.off+s.len])
}

// inScheduler reports whether ip is in the scheduler's own functions.
func (k *kernelSymbols) inScheduler(ip uint64) bool {
	return ip >= k.schedStart && ip < k.schedEnd
}

// interruptedFrames drops, from a stack taken by a timer (innermost first), the frames of
// the hook and of the interrupt that ran it, through its entry: what is left is the code
// the interrupt stopped, empty when that was user code. ok is false when the stack has no
// interrupt entry.
func (k *kernelSymbols) interruptedFrames(ips []uint64) (rest []uint64, ok bool) {
	for i, ip := range ips {
		name := k.name(ip)
		for _, entry := range interruptEntries {
			if strings.HasPrefix(name, entry) {
				return ips[i+1:], true
			}
		}
	}
	return ips, false
}

// interruptEntries start the names of the kernel's interrupt entry points: x86's
// asm_sysvec_apic_timer_interrupt and asm_common_interrupt, arm64's el1h_64_irq (from
// kernel code) and el0t_64_irq (from user code).
var interruptEntries = []string{"asm_sysvec_", "asm_common_interrupt", "el1h_64_irq", "el0t_64_irq"}

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
