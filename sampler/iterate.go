// SPDX-License-Identifier: Apache-2.0

package sampler

import "time"

// Iterator is a Source whose records are brought up to the tick by reading every thread
// at the tick (bpf's hook-free mode, which attaches no hook to keep them current as
// threads run). *bpf.Tracker implements it, doing nothing in its other modes.
type Iterator interface {
	// Iterate brings every record up to the tick mono, an instant named by SetTick, and
	// returns how long its pass over the threads took (0 when there was none).
	Iterate(mono uint64) (time.Duration, error)
	// HookFree reports whether Iterate alone writes the records: nothing then changes
	// them after the tick's pass, so there is nothing to settle (see settle).
	HookFree() bool
}

// iterate runs the Source's iteration for the tick mono, if it has one. A failed
// iteration leaves the records as the last one wrote them: it is logged, once a minute
// at most, and the tick goes on.
func (s *Sampler) iterate(mono uint64) {
	it, ok := s.src.(Iterator)
	if !ok {
		return
	}
	pass, err := it.Iterate(mono)
	if err != nil && s.iterLog.allow(s.cfg.Wall()) {
		s.cfg.Log.WithError(err).Warn("reading the threads at the tick failed")
	}
	s.stats.LongestPass = max(s.stats.LongestPass, pass)
}

// settle is how long after a tick's instant the sampler reads it: none when the Source's
// iteration writes the records (it reads every thread then, and nothing is to be put
// right after it).
func (s *Sampler) settle() time.Duration {
	if it, ok := s.src.(Iterator); ok && it.HookFree() {
		return 0
	}
	return settle(s.cfg.Interval)
}
