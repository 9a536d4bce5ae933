// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
)

// lossCounter is a Source that counts the threads it had no room to track; *bpf.Tracker
// is one.
type lossCounter interface {
	Counters() (bpf.Counters, error)
}

// lossQuiet is how long the untracked count must stay still before a full map is reported
// over: threads are refused at switch-in, so a tick or two without a refusal says little.
const lossQuiet = 10 * time.Second

// Log field keys.
const (
	fieldUntracked = "untracked_threads"
	fieldLost      = "lost_updates"
)

// losses tracks whether the kernel side is refusing threads, to log each episode's start
// and end once (and a reminder a minute while it lasts), never once per tick.
type losses struct {
	// read paces the reads: each is a syscall per counter, some 20 µs a tick together,
	// and a second's delay in noticing a full map changes nothing an operator does.
	read       rateLimit
	losing     bool
	lastGrowth time.Time
	remind     rateLimit
	readFailed rateLimit
}

// checkLosses copies the kernel side's loss counters into the stats and reports a full
// thread map: the threads refused get no rows until a slot frees up, which an operator
// fixes by raising the capacity.
func (s *Sampler) checkLosses(now time.Time) {
	lc, ok := s.src.(lossCounter)
	if !ok || !s.losses.read.allow(now) {
		return
	}
	c, err := lc.Counters()
	if err != nil {
		if s.losses.readFailed.allow(now) {
			s.cfg.Log.WithError(err).Warn("reading the kernel side's loss counters failed; untracked threads go unreported")
		}
		return
	}
	grew := c.UntrackedThreads > s.stats.UntrackedThreads
	s.stats.UntrackedThreads, s.stats.LostUpdates = c.UntrackedThreads, c.LostUpdates
	log := s.cfg.Log.WithFields(logrus.Fields{fieldUntracked: c.UntrackedThreads, fieldLost: c.LostUpdates})
	l := &s.losses
	switch {
	case grew && !l.losing:
		l.losing, l.lastGrowth = true, now
		l.remind.last = now
		log.Warn("thread map is full: new threads get no rows until others exit; raise the capacity")
	case grew:
		l.lastGrowth = now
		if l.remind.allow(now) {
			log.Warn("thread map is still full: new threads get no rows until others exit; raise the capacity")
		}
	case l.losing && now.Sub(l.lastGrowth) >= lossQuiet:
		l.losing = false
		log.Info("thread map has room again: new threads are tracked")
	}
}
