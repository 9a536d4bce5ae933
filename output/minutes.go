// SPDX-License-Identifier: Apache-2.0

package output

import (
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// WriteSpans appends one minute's span rows to the hour's spans file (see writeMinute).
func (w *Writer) WriteSpans(minute time.Time, rows []state.SpanMinute) error {
	var buf []byte
	for i := range rows {
		buf = schema.AppendSpanCSV(buf, &rows[i])
	}
	return w.writeMinute(&w.spans, minute, buf, "writing the spans file failed")
}

// WriteIO adds a minute's block I/O to the hour's io file (see writeMinute).
func (w *Writer) WriteIO(minute time.Time, disks []state.DiskIO) error {
	var buf []byte
	for i := range disks {
		buf = schema.AppendIOCSV(buf, minute, &disks[i])
	}
	return w.writeMinute(&w.io, minute, buf, "writing the io file failed; its minutes are lost until the next hour")
}

// WriteProfile appends a minute's profile rows to the hour's profile file, after the stacks
// they refer to that the hour's stacks file lacks (see writeMinute: the same hour, the same
// handling of failures).
func (w *Writer) WriteProfile(minute time.Time, rows []state.ProfileRow) error {
	var buf []byte
	for i := range rows {
		buf = schema.AppendProfileCSV(buf, &rows[i])
	}
	return w.writeMinuteAfter(&w.profile, minute, buf, "writing the profile file failed", func(hour time.Time) {
		w.writeStackSeq(hour, func(yield func(*state.Stack) bool) {
			for i := range rows {
				if !yield(rows[i].KernelStack) || !yield(rows[i].UserStack) {
					return
				}
			}
		})
	})
}

// writeMinute appends a minute's lines (spans, block I/O) to side file sf of the hour
// being written, the samples file's (the sampler writes a minute at the first tick of the
// next, before that tick's rows, so it is the minute's hour); before any rows, of the
// minute's hour. An hour already closed, being compressed, is never opened again. Like
// the stacks and ticks, a
// failure is logged once an hour (what says what a reader misses) and the rows go on;
// while rows are being dropped (disk full), so are these. The error is ErrClosed after
// Close.
func (w *Writer) writeMinute(sf *sideFile, minute time.Time, lines []byte, what string) error {
	return w.writeMinuteAfter(sf, minute, lines, what, nil)
}

// writeMinuteAfter is writeMinute calling before, when not nil, with the hour the lines go
// to, first and under the same lock: the profile's stacks go to that hour's stacks file.
func (w *Writer) writeMinuteAfter(sf *sideFile, minute time.Time, lines []byte, what string, before func(hour time.Time)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.paused != nil || len(lines) == 0 {
		return nil
	}
	hour := minute.UTC().Truncate(time.Hour)
	if w.file != nil {
		hour = w.file.hour
	}
	if before != nil {
		before(hour)
	}
	if !sf.current(hour) {
		if err := sf.open(w, hour); err != nil {
			sf.fail(w, err, what)
			return nil
		}
	}
	if err := sf.appendLines(lines); err != nil {
		sf.fail(w, err, what)
	}
	return nil
}
