// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/state"
)

// SpanSource reads the spans the kernel side keeps; *bpf.Tracker implements it.
type SpanSource interface {
	// SpanThreads calls fn for every thread with an open span, or with its span at the
	// tick mono (an instant named by SetTick) kept.
	SpanThreads(mono uint64, fn func(*bpf.SpanThread)) error
	// SpanStats reads the cumulative sums of span ids 0..n-1.
	SpanStats(n int) ([]bpf.SpanStats, error)
}

// SpanSink takes each minute's span rows; output.Writer implements it.
type SpanSink interface {
	WriteSpans(minute time.Time, rows []state.SpanMinute) error
}

// openSpan is the span a thread was in at the tick.
type openSpan struct {
	taskStart uint64
	span      uint16
	startNs   uint64
	text      string
}

// spans is the sampler's part in spans: the open spans at this tick, and the sums as of
// the last minute written.
type spans struct {
	open   map[uint32]openSpan
	sums   []bpf.SpanStats // as last written; zero before the first minute: spans since load
	minute time.Time       // the minute being summed
}

// readOpenSpans notes, per thread, the innermost span open at the tick mono, as the
// kernel side kept it at the instant (bpf.SpanThread.At), however many spans the thread
// began and ended since: a query of 0.15 ms open at the instant shows at that tick.
func (s *Sampler) readOpenSpans(mono uint64) {
	clear(s.spans.open)
	err := s.cfg.Spans.SpanThreads(mono, func(th *bpf.SpanThread) {
		if f, ok := th.At(mono); ok && int(f.Span) < len(s.cfg.SpanNames) {
			s.spans.open[th.Tid] = openSpan{taskStart: th.TaskStart, span: f.Span, startNs: f.StartNs, text: f.Text}
		}
	})
	if err != nil && s.slowLog.allow(s.cfg.Wall()) {
		s.cfg.Log.WithError(err).Warn("reading open spans failed; rows miss their span")
	}
}

// inSpanAt reports whether th was inside a span at this tick.
func (s *Sampler) inSpanAt(th *state.Thread) bool {
	o, ok := s.spans.open[uint32(th.Tid)]
	return ok && o.taskStart == th.StartNs
}

// addSpan gives a row its thread's innermost span at the tick.
func (s *Sampler) addSpan(row *state.Sample, th *state.Thread, mono uint64) {
	o, ok := s.spans.open[uint32(th.Tid)]
	if !ok || o.taskStart != th.StartNs {
		return
	}
	row.Span, row.SpanArg = s.cfg.SpanNames[o.span], o.text
	row.SpanUs = int64(mono-o.startNs) / 1000
}

// writeSpans writes the minute summed so far once the tick wall is in a later one, or
// when final (threadcap stops): the spans that ended since the last write, per name.
func (s *Sampler) writeSpans(wall time.Time, final bool) {
	if s.cfg.Spans == nil || s.cfg.SpanSink == nil {
		return
	}
	minute := wall.Truncate(time.Minute)
	if s.spans.minute.IsZero() {
		s.spans.minute = minute
	}
	if !final && !minute.After(s.spans.minute) {
		return
	}
	now, err := s.cfg.Spans.SpanStats(len(s.cfg.SpanNames))
	if err != nil {
		s.cfg.Log.WithError(err).Warn("reading span sums failed; the minute's spans are written with the next")
		return
	}
	if len(s.spans.sums) != len(now) {
		s.spans.sums = make([]bpf.SpanStats, len(now))
	}
	var rows []state.SpanMinute
	for id := range now {
		if r, ok := spanMinute(&s.spans.sums[id], &now[id]); ok {
			r.Minute, r.Span = s.spans.minute, s.cfg.SpanNames[id]
			rows = append(rows, r)
		}
	}
	if err := s.cfg.SpanSink.WriteSpans(s.spans.minute, rows); err != nil {
		s.cfg.Log.WithError(err).Warn("writing span sums failed")
	}
	s.spans.sums = now
	s.spans.minute = minute
}

// spanMinute is what the spans of one name added up to between two reads of their sums.
func spanMinute(before, now *bpf.SpanStats) (state.SpanMinute, bool) {
	var r state.SpanMinute
	r.Count = int64(now.Count - before.Count)
	if r.Count <= 0 {
		return r, false
	}
	r.WallUs = int64(now.WallNs-before.WallNs) / 1000
	var parts int64
	for i := range r.PartUs {
		r.PartUs[i] = int64(now.PartNs[i]-before.PartNs[i]) / 1000
		parts += r.PartUs[i]
	}
	// Whole microseconds of each part: what rounding took off comes back on the
	// largest, so that the parts add up to wall_us as the nanoseconds did.
	largest := 0
	for i := range r.PartUs {
		if r.PartUs[i] > r.PartUs[largest] {
			largest = i
		}
	}
	r.PartUs[largest] += r.WallUs - parts
	for b := range state.SpanBuckets {
		r.WallHist[b] = now.WallHist[b] - before.WallHist[b]
		r.CPUHist[b] = now.CPUHist[b] - before.CPUHist[b]
	}
	return r, true
}
