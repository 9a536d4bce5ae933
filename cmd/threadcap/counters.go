// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
)

// How often the kernel side's lost-stack count is read, and how often its growth may be
// logged: a full stack map stays full, and one line a minute is enough to say so. (A full
// thread record array is the sampler's to report: it reads those counters at every tick.)
const (
	countersEvery   = 10 * time.Second
	countersLogEach = time.Minute
)

// stackLosses decides when lost stacks are worth a log line.
type stackLosses struct {
	logged  uint64
	lastLog time.Time
}

// due says whether lost, read at now, is to be logged: it grew since last logged, and
// that was at least countersLogEach ago.
func (s *stackLosses) due(lost uint64, now time.Time) bool {
	if lost <= s.logged || (!s.lastLog.IsZero() && now.Sub(s.lastLog) < countersLogEach) {
		return false
	}
	s.logged, s.lastLog = lost, now
	return true
}

// watchCounters warns, at most once a minute, while the kernel side loses stacks because
// the stack map is full, until ctx ends.
func watchCounters(ctx context.Context, t *bpf.Tracker, log *logrus.Entry) {
	var losses stackLosses
	ticker := time.NewTicker(countersEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			c, err := t.Counters()
			if err != nil {
				log.WithError(err).Debug("cannot read the kernel side's counters")
				continue
			}
			if losses.due(c.LostStacks, now) {
				log.WithField("lost_stacks", c.LostStacks).
					Warn("stacks are lost to collisions in the stack map: some rows have no kernel_stack; raise stacks.entries")
			}
		}
	}
}
