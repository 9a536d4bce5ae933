// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/state"
)

type fakeSpans struct {
	threads []bpf.SpanThread
	stats   []bpf.SpanStats
}

func (f *fakeSpans) SpanThreads(_ uint64, fn func(*bpf.SpanThread)) error {
	for i := range f.threads {
		fn(&f.threads[i])
	}
	return nil
}

func (f *fakeSpans) SpanStats(n int) ([]bpf.SpanStats, error) {
	return append([]bpf.SpanStats(nil), f.stats[:n]...), nil
}

type fakeSpanSink struct {
	minutes map[time.Time][]state.SpanMinute
}

func (f *fakeSpanSink) WriteSpans(minute time.Time, rows []state.SpanMinute) error {
	f.minutes[minute] = append(f.minutes[minute], rows...)
	return nil
}

// TestRowsShowTheSpanAtTheTick: a row shows the innermost span its thread had open at the
// tick, not one begun since, nor another thread's that reused its tid.
func TestRowsShowTheSpanAtTheTick(t *testing.T) {
	spans := &fakeSpans{stats: make([]bpf.SpanStats, 2)}
	r := newRig(t, Filter{All: true})
	r.s.cfg.Spans, r.s.cfg.SpanNames = spans, []string{"query", "lock_wait"}
	r.src.recs[0] = sleeper(10, 50*sec)
	r.src.recs[1] = sleeper(11, 50*sec)
	r.src.recs[2] = sleeper(12, 50*sec)
	spans.threads = []bpf.SpanThread{
		{Tid: 10, TaskStart: 1, Frames: []bpf.SpanFrame{{Span: 0, StartNs: 99 * sec, Text: "SELECT 1"}, {Span: 1, StartNs: 101 * sec}}},
		{Tid: 11, TaskStart: 2, Frames: []bpf.SpanFrame{{Span: 0, StartNs: 99 * sec}}}, // another thread 11
	}
	rows := r.tick(t, 100*sec+500_000_000)
	if got := rows[10]; got.Span != "query" || got.SpanUs != 1_500_000 || got.SpanArg != "SELECT 1" {
		t.Errorf("thread 10: span %q for %d µs, arg %q; want query for 1500000 µs, SELECT 1 (lock_wait began after the tick)", got.Span, got.SpanUs, got.SpanArg)
	}
	if got := rows[11]; got.Span != "" {
		t.Errorf("thread 11 shows span %q of an earlier thread with its tid", got.Span)
	}
	if got := rows[12]; got.Span != "" {
		t.Errorf("thread 12 shows span %q without one", got.Span)
	}
}

// TestSpansWrittenPerMinute: the spans that ended since the last minute written go out
// once the tick is in a later minute, and at stop; their parts, rounded to µs, still add
// up to their wall time.
func TestSpansWrittenPerMinute(t *testing.T) {
	spans := &fakeSpans{stats: make([]bpf.SpanStats, 1)}
	sink := &fakeSpanSink{minutes: map[time.Time][]state.SpanMinute{}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := &Sampler{cfg: Config{Spans: spans, SpanNames: []string{"query"}, SpanSink: sink, Log: logrus.NewEntry(log)}}
	t0 := time.Date(2026, 11, 21, 3, 10, 0, 0, time.UTC)
	s.writeSpans(t0.Add(10*time.Second), false)
	spans.stats[0] = bpf.SpanStats{Count: 3, WallNs: 3000, PartNs: [4]uint64{1400, 800, 800, 0}}
	spans.stats[0].WallHist[1], spans.stats[0].CPUHist[0] = 3, 3
	s.writeSpans(t0.Add(50*time.Second), false)
	if len(sink.minutes) != 0 {
		t.Fatalf("written within the minute: %v", sink.minutes)
	}
	s.writeSpans(t0.Add(61*time.Second), false)
	got := sink.minutes[t0]
	if len(got) != 1 || got[0].Count != 3 || got[0].WallUs != 3 || got[0].WallHist[1] != 3 {
		t.Fatalf("minute %v: %+v, want 3 spans of 3 µs in all", t0, got)
	}
	if p := got[0].PartUs; p[0]+p[1]+p[2]+p[3] != 3 {
		t.Errorf("parts %v do not add up to wall_us 3", p)
	}
	spans.stats[0].Count = 4
	spans.stats[0].WallNs += 5000
	spans.stats[0].PartNs[2] += 5000
	s.writeSpans(t0.Add(70*time.Second), true)
	if got := sink.minutes[t0.Add(time.Minute)]; len(got) != 1 || got[0].Count != 1 || got[0].PartUs[2] != 5 {
		t.Errorf("at stop: %+v, want the one span since, 5 µs asleep", got)
	}
}

// TestSpanKeptAtTheTick: a thread that ended its span after the tick, and even began
// another, shows at that tick the span the kernel side kept as of the instant, with its
// argument and how long it had run; one the kernel side says was in none shows none.
func TestSpanKeptAtTheTick(t *testing.T) {
	spans := &fakeSpans{stats: make([]bpf.SpanStats, 2)}
	r := newRig(t, Filter{All: true})
	r.s.cfg.Spans, r.s.cfg.SpanNames = spans, []string{"query", "lock_wait"}
	r.src.recs[0] = sleeper(10, 50*sec)
	r.src.recs[1] = sleeper(11, 50*sec)
	tick := 100*sec + 500_000_000
	spans.threads = []bpf.SpanThread{
		// Its 150 µs query ended after the tick, and the next one began: kept at the tick.
		{Tid: 10, TaskStart: 1, Frames: []bpf.SpanFrame{{Span: 0, StartNs: tick + 2_000_000, Text: "SELECT 2"}},
			TickNs: tick, AtTickOpen: true, AtTick: bpf.SpanFrame{Span: 0, StartNs: tick - 100_000, Text: "SELECT 1"}},
		// Began its query after the tick, in none at it.
		{Tid: 11, TaskStart: 1, Frames: []bpf.SpanFrame{{Span: 0, StartNs: tick - 1_000_000}}, TickNs: tick},
	}
	rows := r.tick(t, tick)
	if got := rows[10]; got.Span != "query" || got.SpanUs != 100 || got.SpanArg != "SELECT 1" {
		t.Errorf("thread 10: span %q for %d µs, arg %q; want the query open at the tick, 100 µs in, SELECT 1", got.Span, got.SpanUs, got.SpanArg)
	}
	if got := rows[11]; got.Span != "" {
		t.Errorf("thread 11 shows span %q; at the tick it was in none", got.Span)
	}
}

// TestSleeperInASpanIsActive: with the default filter a thread asleep since long before the
// previous tick gets no row, unless it is inside a span at the tick: a backend waiting on a
// lock in a query. Once the span has ended, it has none again.
func TestSleeperInASpanIsActive(t *testing.T) {
	spans := &fakeSpans{stats: make([]bpf.SpanStats, 2)}
	r := newRig(t, Filter{})
	r.s.cfg.Spans, r.s.cfg.SpanNames = spans, []string{"query", "lock_wait"}
	r.src.recs[0] = sleeper(10, 50*sec)
	r.src.recs[1] = sleeper(11, 50*sec)
	if rows := r.tick(t, 99*sec); len(rows) != 0 {
		t.Fatalf("idle sleepers got rows: %v", rows)
	}
	spans.threads = []bpf.SpanThread{{Tid: 10, TaskStart: 1, Frames: []bpf.SpanFrame{
		{Span: 0, StartNs: 60 * sec, Text: "UPDATE t"}, {Span: 1, StartNs: 61 * sec}}}}
	for tick := 100 * sec; tick <= 102*sec; tick += sec {
		rows := r.tick(t, tick)
		got, ok := rows[10]
		if !ok || got.Span != "lock_wait" || got.State != state.Sleeping || got.Syscall == "" {
			t.Errorf("tick %d: row %v %+v; want the sleeper in lock_wait, sleeping in its syscall", tick/sec, ok, got)
		}
		if _, ok := rows[11]; ok {
			t.Errorf("tick %d: the idle sleeper outside any span got a row", tick/sec)
		}
	}
	spans.threads = nil
	if rows := r.tick(t, 103*sec); len(rows) != 0 {
		t.Errorf("after its span ended the sleeper still got a row: %v", rows)
	}
}
