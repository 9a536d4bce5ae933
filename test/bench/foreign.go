// SPDX-License-Identifier: Apache-2.0

package main

import "github.com/cilium/ebpf/link"

// foreignTracers counts the tracing BPF links on the machine, called when the benchmark
// itself has none attached. Another tracer on the same hooks (another threadcap, a test of
// one) slows every configuration, the baseline too, and skews every ratio: the results
// say how many windows ran with one. Links, not programs: a detached program stays
// loaded for a few hundred milliseconds, costing nothing.
func foreignTracers() int {
	n := 0
	it := new(link.Iterator)
	for it.Next() {
		l := it.Take()
		if info, err := l.Info(); err == nil && info.Type == link.TracingType {
			n++
		}
		l.Close()
	}
	return n
}
