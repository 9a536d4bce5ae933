// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"os"
	"strconv"
	"testing"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/state"
)

// hiddenFromIterators finds the threads on the machine that the kernel gives no task
// iterator: listed in /proc before a pass of the hook-free mode's own iterator, not read by
// it, and still there after it.
func hiddenFromIterators(t *testing.T) map[int]bool {
	t.Helper()
	listed := listTasks()
	tr, err := bpf.Open(bpf.Config{Syscalls: bpf.SyscallsTick})
	if err != nil {
		t.Fatalf("opening a task iterator of the test's own: %v", err)
	}
	defer tr.Close()
	tick := bpf.Now()
	if _, err := tr.Iterate(tick); err != nil {
		t.Fatalf("a pass of the test's own task iterator: %v", err)
	}
	read := map[int]bool{}
	tr.Scan(0, tick, nil, func(_ uint32, th *state.Thread) { read[int(th.Tid)] = true })
	hidden := map[int]bool{}
	for _, tk := range listed {
		if _, err := os.Stat("/proc/" + strconv.Itoa(tk.tid)); err == nil && !read[tk.tid] {
			hidden[tk.tid] = true
		}
	}
	return hidden
}
