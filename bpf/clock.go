// SPDX-License-Identifier: Apache-2.0

package bpf

import "golang.org/x/sys/unix"

// Now is the kernel side's clock (bpf_ktime_get_ns: CLOCK_MONOTONIC) in nanoseconds,
// the clock every time in a record is on.
func Now() uint64 {
	var ts unix.Timespec
	// CLOCK_MONOTONIC cannot fail on Linux.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}
