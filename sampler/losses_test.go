// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/bpf"
)

// countingSource is a fakeSource whose kernel side ran out of room for some threads.
type countingSource struct {
	*fakeSource
	counters bpf.Counters
	reads    int
}

func (c *countingSource) Counters() (bpf.Counters, error) {
	c.reads++
	return c.counters, nil
}

// TestLossCountersAreReadOnceASecond: at 20 Hz, reading them at every tick would cost the
// sampler a syscall per counter 20 times a second for nothing.
func TestLossCountersAreReadOnceASecond(t *testing.T) {
	r := newRig(t, Filter{})
	src := &countingSource{fakeSource: r.src}
	r.s.src = src
	for i := range 40 { // two seconds at 20 Hz
		r.tick(t, 100*sec+uint64(i)*sec/20)
	}
	if src.reads < 2 || src.reads > 3 {
		t.Errorf("counters read %d times in 2 s of ticks, want 2 or 3", src.reads)
	}
}

// TestFullMapIsReportedOncePerEpisode checks what an operator sees when the thread map
// fills: the count in the stats at every tick, one warning when threads start being
// refused, a reminder at most once a minute, and one note once refusals stop.
func TestFullMapIsReportedOncePerEpisode(t *testing.T) {
	r := newRig(t, Filter{})
	src := &countingSource{fakeSource: r.src}
	r.s.src = src
	logger, hook := logtest.NewNullLogger()
	r.s.cfg.Log = logrus.NewEntry(logger)
	const full = "thread map is full: new threads get no rows until others exit; raise the capacity"
	const still = "thread map is still full: new threads get no rows until others exit; raise the capacity"
	const room = "thread map has room again: new threads are tracked"

	mono := 100 * sec
	step := func(untracked uint64) {
		t.Helper()
		mono += sec
		src.counters = bpf.Counters{UntrackedThreads: untracked, LostUpdates: 2 * untracked}
		r.tick(t, mono)
		if st := r.s.Stats(); st.UntrackedThreads != untracked || st.LostUpdates != 2*untracked {
			t.Fatalf("stats %+v, want %d untracked and %d lost", st, untracked, 2*untracked)
		}
	}
	step(0)
	var untracked uint64
	for range 90 { // a minute and a half of refusals, one more each tick
		untracked++
		step(untracked)
	}
	for range 9 { // quiet, but not yet long enough to call it over
		step(untracked)
	}
	count := func(msg string) int { return countLogs(hook, msg) }
	if count(full) != 1 || count(still) != 1 || count(room) != 0 {
		t.Errorf("during 90 s of refusals: %d full, %d still full, %d room again; want 1, 1, 0",
			count(full), count(still), count(room))
	}
	step(untracked)
	step(untracked)
	if count(room) != 1 {
		t.Errorf("after 10 s without refusals %d notes of room again, want 1", count(room))
	}
	step(untracked + 1)
	if count(full) != 2 {
		t.Errorf("a new episode logged %d warnings in all, want 2", count(full))
	}
	for _, e := range hook.AllEntries() {
		if e.Message == full && e.Data[fieldUntracked] == nil {
			t.Errorf("warning without the untracked count: %v", e.Data)
		}
	}
}

func countLogs(hook *logtest.Hook, msg string) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Message == msg {
			n++
		}
	}
	return n
}
