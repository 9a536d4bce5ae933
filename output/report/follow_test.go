// SPDX-License-Identifier: Apache-2.0

package report

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// busyRows is tick i of a machine whose threads change what they do from tick to tick:
// the fixture's four kinds of thread, and threads that come, run, sleep in a span and
// exit (a dead row).
func busyRows(tick time.Time, i int) []state.Sample {
	rows := tickRows(tick, i)
	for n := range 6 {
		if (i+n)%7 == 0 {
			continue // not there at this tick
		}
		s := thread(tick, int32(1000+n), "worker", state.State((i+n)%int(state.Dead+1)), "", int64(1000*((i+n)%5)))
		s.Tid = int32(1000 + n + 10*(i/50)) // a new thread every 5 s
		if (i+n)%3 == 0 {
			s.Span, s.SpanUs, s.SpanArg = "query", 150, "SELECT 1"
		}
		rows = append(rows, s)
	}
	return rows
}

// TestFollowerAnswersAsRun: live mode's follower, asked each second as rows are written at
// 10 Hz, over windows that move forward, widen now and then, and cross the end of an hour
// (when the writer compresses the closed hour), gives Run's answers for the same window
// and context.
func TestFollowerAnswersAsRun(t *testing.T) {
	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 14, 57, 30, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(first.UnixNano())
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	followers := map[string]*Follower{}
	queries := map[string]Query{
		"state":        {By: []string{"state"}},
		"process,span": {By: []string{"process", "span"}, Where: []Match{{Column: "process", Value: "worker"}}},
		"tid":          {By: []string{"tid"}},
	}
	for key, q := range queries {
		f, err := NewFollower(dir, q.By, q.Where)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		followers[key] = f
	}
	const hz = 10
	answered := 0
	for i := range 300 * hz { // 14:57:30 to 15:02:30
		tick := first.Add(time.Duration(i) * time.Second / hz)
		clock.Store(tick.UnixNano())
		if err := w.Write(tick, busyRows(tick, i)); err != nil {
			t.Fatal(err)
		}
		if i%hz != 3 || i < 2*hz {
			continue // asked once a second, between ticks; from 2 s in (a window needs a row)
		}
		if hour := tick.Truncate(time.Hour); tick.Sub(hour) < 2*time.Second && hour.After(first) {
			waitCompressed(t, dir, hour.Add(-time.Hour))
		}
		now := tick.Truncate(time.Second)
		last := time.Minute
		if answered%50 == 49 {
			last = 2 * time.Minute // widened for once: read again from the files' start
		}
		window := Window{From: now.Add(-last), To: now}
		context := Window{From: now.Add(-3 * time.Minute), To: now}
		for key, q := range queries {
			breakdown, timeline, err := followers[key].Answer(window, context, 5*time.Second)
			if err != nil {
				t.Fatalf("%s at %s: %v", key, tick.Format(time.TimeOnly), err)
			}
			q.Window = window
			want, err := Run(dir, q)
			if err != nil {
				t.Fatal(err)
			}
			same(t, key+" breakdown at "+tick.Format(time.TimeOnly), breakdown, want)
			tq := Query{Window: context, By: q.By, Where: q.Where, Step: 5 * time.Second}
			want, err = Run(dir, tq)
			if err != nil {
				t.Fatal(err)
			}
			want.By = nil // a timeline's answer is not grouped
			same(t, key+" timeline at "+tick.Format(time.TimeOnly), timeline, want)
		}
		answered++
	}
	if answered < 290 {
		t.Fatalf("asked %d times", answered)
	}
}

// waitCompressed waits until the writer has compressed the samples and ticks files of hour
// and removed their plain copies.
func waitCompressed(t *testing.T, dir string, hour time.Time) {
	t.Helper()
	for _, kind := range []hourfile.Kind{hourfile.Samples, hourfile.Ticks} {
		waitFor(t, filepath.Join(dir, kind.Name(hour, hourfile.Gzip)))
		plain := filepath.Join(dir, kind.Name(hour, hourfile.CSV))
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(plain); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is still there", plain)
			}
		}
	}
}

// same fails the test unless got and want are the same answer.
func same(t *testing.T, what string, got, want *Result) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	switch {
	case got.Ticks != want.Ticks || got.Rows != want.Rows || got.CPUUs != want.CPUUs:
		t.Fatalf("%s: %d ticks, %d rows, %d µs; Run: %d ticks, %d rows, %d µs", what, got.Ticks, got.Rows, got.CPUUs, want.Ticks, want.Rows, want.CPUUs)
	case !reflect.DeepEqual(got.Groups, want.Groups):
		t.Fatalf("%s: groups\n%+v\nRun's\n%+v", what, got.Groups, want.Groups)
	case !reflect.DeepEqual(got.Timeline, want.Timeline):
		t.Fatalf("%s: timeline\n%+v\nRun's\n%+v", what, got.Timeline, want.Timeline)
	default:
		t.Fatalf("%s:\n%+v\nRun's\n%+v", what, *got, *want)
	}
}
