// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/threadcap/threadcap/state"
)

// Observer is told what the sampler does as it does it, from the tick loop's goroutine;
// output/metrics implements it. Its methods must be quick: the next tick waits for them.
type Observer interface {
	// Rows is each batch of a tick's rows, as it is handed to the sink. rows is reused
	// after the call: it must not be kept.
	Rows(tick time.Time, rows []state.Sample)
	// Ticked follows every tick.
	Ticked(r TickReport)
}

// TickReport is what a tick took and the counts after it.
type TickReport struct {
	// Took is from the tick's start to its last rows handed to the sink, on the Mono clock.
	Took  time.Duration
	Stats Stats
	// Tracked is how many threads hold a record of the kernel side as the sampler last
	// read them: the slots in use of the kernel side's capacity.
	Tracked int
	// Seeded is how many threads are still known from /proc only, not yet seen by the
	// kernel side.
	Seeded int
}
