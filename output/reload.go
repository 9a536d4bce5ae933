// SPDX-License-Identifier: Apache-2.0

package output

import (
	"fmt"
	"time"
)

// Policy is what a running Writer can change without a restart: how closed hours are
// compressed and kept, and the free-space floor.
type Policy struct {
	Compress     string
	MaxAge       time.Duration
	MaxBytes     int64
	MinFreeBytes int64
	FsyncEvery   time.Duration
}

// SetPolicy applies p from the next write and maintenance pass on. It waits for a
// maintenance pass in progress to end, so that a pass never mixes two policies.
func (w *Writer) SetPolicy(p Policy) error {
	w.mu.Lock()
	c := w.cfg
	w.mu.Unlock()
	c.Compress, c.MaxAge, c.MaxBytes, c.MinFreeBytes, c.FsyncEvery = p.Compress, p.MaxAge, p.MaxBytes, p.MinFreeBytes, p.FsyncEvery
	if err := c.Validate(); err != nil {
		return fmt.Errorf("invalid output policy: %w", err)
	}
	c = c.withDefaults()
	// maintMu before mu: the order maintenance takes them in.
	w.maintMu.Lock()
	w.mu.Lock()
	w.cfg.Compress, w.cfg.MaxAge, w.cfg.MaxBytes = c.Compress, c.MaxAge, c.MaxBytes
	w.cfg.MinFreeBytes, w.cfg.FsyncEvery = c.MinFreeBytes, c.FsyncEvery
	w.mu.Unlock()
	w.maintMu.Unlock()
	// A shorter max age or a new compression applies to the hours already closed, now.
	w.kickMaintenance()
	return nil
}
