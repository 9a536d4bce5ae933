// SPDX-License-Identifier: Apache-2.0

package load

import (
	"syscall"
	"time"
)

// Syscalls is the syscall storm: threads calling getppid(2), about the cheapest syscall
// there is, in a tight loop. It is where per-syscall hooks cost the most, relatively.
type Syscalls struct {
	Threads int
}

// batch is how many calls a thread makes between looks at the clock.
const batch = 1000

// Run reports syscalls per second, all threads together.
func (s *Syscalls) Run(d time.Duration) (Result, error) {
	start := time.Now()
	end := start.Add(d)
	n := onThreads(s.Threads, func(int) int64 {
		var n int64
		for time.Now().Before(end) {
			for range batch {
				// RawSyscall: the Go scheduler's own bookkeeping would dilute the hooks' cost.
				syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			}
			n += batch
		}
		return n
	})
	return Result{OpsPerSec: float64(n) / time.Since(start).Seconds()}, nil
}

// Close has nothing to end: the threads live only while Run does.
func (s *Syscalls) Close() error { return nil }
