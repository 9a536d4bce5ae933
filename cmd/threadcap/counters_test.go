// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"
	"time"
)

// Stack losses growing at every read for five minutes are logged once a minute; a count
// that stays put is not logged again.
func TestStackLossesAreLoggedOnceAMinuteWhileTheyGrow(t *testing.T) {
	var losses stackLosses
	start := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	logged := 0
	for i := range 30 { // every 10 s
		if losses.due(uint64(i+1), start.Add(time.Duration(i)*countersEvery)) {
			logged++
		}
	}
	if logged != 5 {
		t.Errorf("losses growing for 5 minutes logged %d times, want 5", logged)
	}
	// Growth not yet logged is logged after a quiet spell; a count that stays put is not.
	if !losses.due(30, start.Add(time.Hour)) {
		t.Error("growth since the last line is not logged")
	}
	if losses.due(30, start.Add(2*time.Hour)) {
		t.Error("a count that did not grow is logged")
	}
}
