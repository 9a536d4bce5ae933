// SPDX-License-Identifier: Apache-2.0

package load

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PingPong is the context-switch storm: pairs of threads bounce a byte through two pipes,
// every thread pinned to the same CPU, so that every round trip is two wakeups and two
// context switches on that CPU, the events the scheduler hooks run on.
type PingPong struct {
	Pairs int
	CPU   int
}

// Run reports round trips per second, all pairs together.
func (p *PingPong) Run(d time.Duration) (Result, error) {
	pipes := make([][2][2]int, p.Pairs)
	defer func() {
		for _, pair := range pipes {
			for _, fds := range pair {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
		}
	}()
	for i := range pipes {
		for j := range pipes[i] {
			if err := unix.Pipe(pipes[i][j][:]); err != nil {
				return Result{}, fmt.Errorf("making the ping-pong pipes: %w", err)
			}
		}
	}
	var pinErr error
	var once sync.Once
	pin := func() {
		var set unix.CPUSet
		set.Set(p.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			once.Do(func() { pinErr = fmt.Errorf("pinning to CPU %d: %w", p.CPU, err) })
		}
	}
	start := time.Now()
	end := start.Add(d)
	// Threads 2i and 2i+1 are pair i: the first serves the ball and stops the rally, the
	// second returns it until told to stop ('q').
	n := onThreads(2*p.Pairs, func(i int) int64 {
		pin()
		ping, pong := pipes[i/2][0], pipes[i/2][1]
		buf := []byte{'p'}
		if i%2 == 1 {
			for {
				if _, err := unix.Read(ping[0], buf); err != nil || buf[0] == 'q' {
					return 0
				}
				unix.Write(pong[1], buf)
			}
		}
		var n int64
		for time.Now().Before(end) {
			for range 100 {
				unix.Write(ping[1], buf)
				unix.Read(pong[0], buf)
			}
			n += 100
		}
		unix.Write(ping[1], []byte{'q'})
		return n
	})
	return Result{OpsPerSec: float64(n) / time.Since(start).Seconds()}, pinErr
}

// Close has nothing to end: the threads live only while Run does.
func (p *PingPong) Close() error { return nil }
