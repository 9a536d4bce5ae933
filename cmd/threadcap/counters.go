// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
)

// How often the kernel side's loss counters are read, and how often each kind of growth
// may be logged: a full map stays full, and one line a minute is enough to say so.
const (
	countersEvery   = 10 * time.Second
	countersLogEach = time.Minute
)

// lossReport is one kind of loss the kernel side counts, and what to do about it.
type lossReport struct {
	msg     string
	counts  func(bpf.Counters) logrus.Fields
	grew    func(old, now bpf.Counters) bool
	lastLog time.Time
	logged  bpf.Counters
}

// due says whether counters c, read at now, are to be logged: they grew since last
// logged, and that was at least countersLogEach ago.
func (r *lossReport) due(c bpf.Counters, now time.Time) bool {
	if !r.grew(r.logged, c) || (!r.lastLog.IsZero() && now.Sub(r.lastLog) < countersLogEach) {
		return false
	}
	r.logged, r.lastLog = c, now
	return true
}

// watchCounters warns, at most once a minute per kind, while the kernel side loses
// threads, events or stacks because a map is full, until ctx ends.
func watchCounters(ctx context.Context, t *bpf.Tracker, log *logrus.Entry) {
	reports := lossReports(t.Capacity())
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
			for _, r := range reports {
				if r.due(c, now) {
					log.WithFields(r.counts(c)).Warn(r.msg)
				}
			}
		}
	}
}

// lossReports are the kinds of loss reported, for a record array of capacity threads.
func lossReports(capacity uint32) []*lossReport {
	return []*lossReport{{
		msg: "the thread record array is full: some threads get no rows; raise capacity",
		counts: func(c bpf.Counters) logrus.Fields {
			return logrus.Fields{"untracked_threads": c.UntrackedThreads, "lost_updates": c.LostUpdates, "capacity": capacity}
		},
		grew: func(old, now bpf.Counters) bool {
			return now.UntrackedThreads > old.UntrackedThreads || now.LostUpdates > old.LostUpdates
		},
	}, {
		msg:    "stacks are lost to collisions in the stack map: some rows have no kernel_stack; raise stacks.entries",
		counts: func(c bpf.Counters) logrus.Fields { return logrus.Fields{"lost_stacks": c.LostStacks} },
		grew:   func(old, now bpf.Counters) bool { return now.LostStacks > old.LostStacks },
	}}
}
