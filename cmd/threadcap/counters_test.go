// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"
	"time"

	"github.com/threadcap/threadcap/bpf"
)

// Counters growing at every read for five minutes are logged once a minute per kind;
// counters that stay put are not logged at all.
func TestLossesAreLoggedOnceAMinuteWhileTheyGrow(t *testing.T) {
	reports := lossReports(1024)
	start := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	var c bpf.Counters
	logged := make([]int, len(reports))
	for i := range 30 { // every 10 s
		c.UntrackedThreads++
		now := start.Add(time.Duration(i) * countersEvery)
		for k, r := range reports {
			if r.due(c, now) {
				logged[k]++
			}
		}
	}
	if logged[0] != 5 {
		t.Errorf("record losses growing for 5 minutes logged %d times, want 5", logged[0])
	}
	if logged[1] != 0 {
		t.Errorf("stack losses that never grew logged %d times", logged[1])
	}
	// Growth after a quiet spell is logged at once.
	c.LostStacks = 3
	if !reports[1].due(c, start.Add(time.Hour)) {
		t.Error("the first stack loss is not logged")
	}
}
