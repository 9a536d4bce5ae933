// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
)

// TestClockSteps steps the wall clock the sampler and the writer share (never the
// machine's) back an hour, forward again, and forward another hour, 20 ticks a second:
// ticking goes on at the rate asked, rows written while the clock was back stay in the
// current hour's file, the step forward starts the next hour's file, and no row is lost.
// The test's clock starts at the middle of an hour, so that a run near the machine's hour
// boundary does not cross into another hour on its own.
func TestClockSteps(t *testing.T) {
	now := time.Now()
	mid := now.Truncate(time.Hour).Add(30 * time.Minute).Sub(now)
	var offset atomic.Int64
	wall := func() time.Time { return time.Now().Add(mid + time.Duration(offset.Load())) }
	const interval, phase = 50 * time.Millisecond, time.Second
	p := startPipeline(t, options{interval: interval, wall: wall,
		filter: sampler.Filter{All: true, Pids: []int32{int32(os.Getpid())}}})
	hour := wall().UTC().Truncate(time.Hour)
	for _, step := range []time.Duration{-time.Hour, 0, time.Hour} {
		time.Sleep(phase)
		offset.Store(int64(step))
	}
	time.Sleep(phase)
	p.stop(t)
	st := p.sampler.Stats()
	if err := p.writer.Close(); err != nil {
		t.Fatal(err)
	}

	rows := readHours(t, p.dir)
	t.Logf("%d ticks (%d skipped) in %v, %d rows", st.Ticks, st.SkippedTicks, 4*phase, len(rows))
	if limit := uint64(2 * 4 * phase / interval); st.Ticks > limit {
		t.Errorf("%d ticks in %v at %v: the clock steps made the sampler spin (limit %d)", st.Ticks, 4*phase, interval, limit)
	}
	if uint64(len(rows)) != st.Rows || p.writer.DroppedRows() != 0 {
		t.Errorf("the sampler made %d rows, the files hold %d, %d dropped", st.Rows, len(rows), p.writer.DroppedRows())
	}
	want := []string{
		"threadcap_samples_" + hour.Format("2006-01-02T15Z") + ".csv",
		"threadcap_samples_" + hour.Add(time.Hour).Format("2006-01-02T15Z") + ".csv",
	}
	got, _ := filepath.Glob(filepath.Join(p.dir, "threadcap_samples_*"))
	if len(got) != 2 || filepath.Base(got[0]) != want[0] || filepath.Base(got[1]) != want[1] {
		t.Errorf("hour files %v, want %v: the hour the clock went back to must not get a file", got, want)
	}
	if n := logged(p.hook, logrus.WarnLevel, "clock went back"); n != 1 {
		t.Errorf("the clock going back was logged %d times, want once", n)
	}
	// Steps are not slow ticks: the hours stepped over are not counted as ticks missed.
	if n := logged(p.hook, logrus.WarnLevel, "wall clock was stepped"); n != 3 {
		t.Errorf("three steps of the wall clock were logged %d times", n)
	}
	if st.SkippedTicks > 10 {
		t.Errorf("%d ticks counted as skipped: the clock steps were taken for slow ticks", st.SkippedTicks)
	}
}

// slowSink makes the third tick's write take longer than several intervals, as a stalled
// disk would (the first tick, taken at start, is not on the tick loop's schedule).
type slowSink struct {
	sampler.Sink
	writes int
	delay  time.Duration
}

func (s *slowSink) Write(tick time.Time, rows []state.Sample) error {
	if s.writes++; s.writes == 3 {
		time.Sleep(s.delay)
	}
	return s.Sink.Write(tick, rows)
}

// TestSlowTickIsSkippedAndCounted stalls one tick for five intervals: the ticks it ran
// past are skipped, counted and logged, not queued, and sampling carries on.
func TestSlowTickIsSkippedAndCounted(t *testing.T) {
	const interval = 100 * time.Millisecond
	p := startPipeline(t, options{interval: interval,
		filter: sampler.Filter{All: true, Pids: []int32{int32(os.Getpid())}},
		wrap:   func(s sampler.Sink) sampler.Sink { return &slowSink{Sink: s, delay: 5 * interval} },
	})
	time.Sleep(2 * time.Second)
	p.stop(t)
	st := p.sampler.Stats()
	t.Logf("%d ticks, %d skipped", st.Ticks, st.SkippedTicks)
	if st.SkippedTicks < 4 {
		t.Errorf("a tick that took 5 intervals skipped %d ticks, want at least 4", st.SkippedTicks)
	}
	if st.Ticks+st.SkippedTicks > uint64(2*time.Second/interval)+2 {
		t.Errorf("%d ticks and %d skipped in 2 s at %v: skipped ticks were queued", st.Ticks, st.SkippedTicks, interval)
	}
	if logged(p.hook, logrus.WarnLevel, "ticks take longer than the sampling interval") != 1 {
		t.Error("the slow tick was not logged once")
	}
}
