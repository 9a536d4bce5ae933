// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"sync"
	"time"
)

// Update is what a running Sampler can change without a restart.
type Update struct {
	Interval time.Duration
	Filter   Filter
}

// updates hands an Update from any goroutine to Run, which applies it between ticks, so
// the tick itself needs no lock.
type updates struct {
	mu      sync.Mutex
	pending *Update
	ready   chan struct{}
}

func newUpdates() updates { return updates{ready: make(chan struct{}, 1)} }

// Reconfigure asks Run to take u before its next tick; an update not yet taken is
// replaced. It may be called from any goroutine.
func (s *Sampler) Reconfigure(u Update) error {
	if err := CheckInterval(u.Interval); err != nil {
		return err
	}
	s.updates.mu.Lock()
	s.updates.pending = &u
	s.updates.mu.Unlock()
	select {
	case s.updates.ready <- struct{}{}:
	default: // Run has not taken the previous signal yet; it will find u
	}
	return nil
}

// takeUpdate applies a pending update; Run calls it.
func (s *Sampler) takeUpdate() {
	s.updates.mu.Lock()
	u := s.updates.pending
	s.updates.pending = nil
	s.updates.mu.Unlock()
	if u != nil {
		s.cfg.Interval, s.cfg.Filter = u.Interval, u.Filter
	}
}
