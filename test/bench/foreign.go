// SPDX-License-Identifier: Apache-2.0

package main

import "github.com/cilium/ebpf"

// foreignTracers counts the tracing BPF programs loaded on the machine, called when the
// benchmark itself has none loaded. Another tracer on the same hooks (another threadcap,
// a test of one) slows every configuration, the baseline too, and makes every ratio
// look better than it is: the results say how many windows ran with one.
func foreignTracers() int {
	n := 0
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return n // the end of the list, or nothing readable
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // unloaded meanwhile
		}
		if info, err := p.Info(); err == nil && info.Type == ebpf.Tracing {
			n++
		}
		p.Close()
	}
}
