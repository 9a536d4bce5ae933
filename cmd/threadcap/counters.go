// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
)

// How often the kernel side's loss counters are read, and how often their growth may be
// logged: a full record array lasts, and one line a minute is enough to say so.
const (
	countersEvery   = 10 * time.Second
	countersLogEach = time.Minute
)

// watchCounters warns when the kernel side loses threads or events because the record
// array is full, until ctx ends.
func watchCounters(ctx context.Context, t *bpf.Tracker, log *logrus.Entry) {
	ticker := time.NewTicker(countersEvery)
	defer ticker.Stop()
	var reported bpf.Counters
	var lastLog time.Time
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
			if c == reported || now.Sub(lastLog) < countersLogEach {
				continue
			}
			log.WithFields(logrus.Fields{
				"untracked_threads":     c.UntrackedThreads,
				"new_untracked_threads": c.UntrackedThreads - reported.UntrackedThreads,
				"lost_updates":          c.LostUpdates,
				"new_lost_updates":      c.LostUpdates - reported.LostUpdates,
				"capacity":              t.Capacity(),
			}).Warn("the thread record array is full: some threads get no rows; raise capacity")
			reported, lastLog = c, now
		}
	}
}
