// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// tickSink reports each tick's time on a channel; Run calls it on its own goroutine.
type tickSink chan time.Time

func (c tickSink) Write(tick time.Time, _ []state.Sample) error {
	select {
	case c <- tick:
	default:
	}
	return nil
}

func TestReconfigureChangesTheRateOfARunningSampler(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	ticks := make(tickSink, 100)
	s, err := New(Config{
		Interval: time.Hour, ProcRoot: t.TempDir(), Self: 999,
		Mono: func() uint64 { return uint64(time.Now().UnixNano()) }, Wall: time.Now, Log: logrus.NewEntry(log),
	}, &fakeSource{recs: map[uint32]*state.Thread{}}, ticks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-ticks // the first tick, taken at once

	if err := s.Reconfigure(Update{Interval: time.Millisecond}); err == nil {
		t.Error("Reconfigure accepted 1000 Hz")
	}
	const fast = 10 * time.Millisecond
	if err := s.Reconfigure(Update{Interval: fast, Filter: Filter{All: true}}); err != nil {
		t.Fatal(err)
	}
	// At one tick an hour no second tick would come; at 100 Hz they come on multiples of
	// 10ms. The timeout only bounds a broken run.
	timeout := time.After(30 * time.Second)
	for range 3 {
		select {
		case tick := <-ticks:
			if !tick.Equal(tick.Truncate(fast)) {
				t.Errorf("tick at %v is not on a multiple of the new interval", tick)
			}
		case <-timeout:
			t.Fatal("no ticks at the new rate")
		}
	}
}
