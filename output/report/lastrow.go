// SPDX-License-Identifier: Apache-2.0

package report

import "github.com/threadcap/threadcap/output/hourfile"

// lastRow is where a thread's last row went: its bucket (nil in a breakdown), its group,
// and the row's fields of the By columns as written, each ended by a NUL.
type lastRow struct {
	b   *Bucket
	g   *Group
	raw []byte
	// spans are the same fields as the row's line holds them, the text of each of
	// spansOf's layout's runs ended by a newline, when the line held no quote; spansOf is
	// nil otherwise. A quote-free line holds no newline, and its fields no comma.
	spans   []byte
	spansOf *run
	// next is the thread whose row came after this one's.
	next *lastRow
}

// group returns the group of a row's By values in groups, bucket b's (nil for the
// breakdown's), made on first use. text is the row's line when it holds no quote.
//
// When the groups are per thread (tid is a By column), a thread's rows nearly always go
// where its previous row went: its process, name, user, cgroup and command line stay, and
// its state and syscall often do. Comparing the row's fields with those of the thread's
// last row costs less than reading each value and looking the group up by them, which
// matters as the By columns grow many and long (the HTML page groups by 16). The last rows
// are no more than the groups.
//
// A tick's rows come in much the order of the tick before (the order the sampler finds
// the threads in), so the thread after the previous row's is tried before the tid is
// looked up. The tid only says which last row to compare with; the comparison decides, so
// a reused tid is only slower.
func (s *scan) group(l *layout, fields [][]byte, text []byte, b *Bucket, groups map[string]*Group) *Group {
	if l.tidBy < 0 {
		return s.lookUp(l, fields, groups)
	}
	var last *lastRow
	if s.prevRow != nil {
		last = s.prevRow.next
	}
	if last != nil && last.b == b && last.same(l, fields, text) {
		s.prevRow = last
		return last.g
	}
	tid, _ := atoi(value(fields, l.by[l.tidBy], false))
	last = s.lastByThread[tid]
	if last == nil {
		last = &lastRow{}
		s.lastByThread[tid] = last
	}
	if s.prevRow != nil {
		s.prevRow.next = last
	}
	s.prevRow = last
	if last.b == b && last.same(l, fields, text) {
		return last.g
	}
	last.b, last.g, last.raw = b, s.lookUp(l, fields, groups), last.raw[:0]
	for _, idx := range l.by {
		// NUL ends each field: schema.AppendCSV never writes one.
		last.raw = append(append(last.raw, value(fields, idx, false)...), 0)
	}
	last.keepSpans(l, fields, text)
	return last.g
}

// same reports whether a row's fields of the By columns are those of last's row, as
// written: fields written the same read the same.
//
// A line without quotes is its fields joined by commas, none of which holds a comma, so
// two such lines' runs of By columns (layout.runs, a few where the By columns are 16) are
// the same text when, and only when, their fields are the same: one comparison a run
// rather than one a field.
func (last *lastRow) same(l *layout, fields [][]byte, text []byte) bool {
	if text != nil && last.spansOf != nil && last.spansOf == &l.runs[0] {
		rest := last.spans
		for _, r := range l.runs {
			v := hourfile.Span(text, fields, r.first, r.last)
			// Some runs are empty (no span, no unit), and the same when their lengths are.
			if len(v) >= len(rest) || rest[len(v)] != '\n' || len(v) > 0 && string(rest[:len(v)]) != string(v) {
				return false
			}
			rest = rest[len(v)+1:]
		}
		return true
	}
	rest := last.raw
	for _, idx := range l.by {
		v := value(fields, idx, false)
		// Many fields are empty, and the same when their lengths are.
		if len(v) >= len(rest) || rest[len(v)] != 0 || len(v) > 0 && string(rest[:len(v)]) != string(v) {
			return false
		}
		rest = rest[len(v)+1:]
	}
	// The same fields, now from a line without quotes, or of another file's layout: the
	// next row compares runs.
	if text != nil {
		last.keepSpans(l, fields, text)
	}
	return true
}

// keepSpans keeps the runs of a row's line without quotes in last; with quotes (text nil)
// it forgets the spans.
func (last *lastRow) keepSpans(l *layout, fields [][]byte, text []byte) {
	last.spansOf = nil
	if text == nil || len(l.runs) == 0 {
		return
	}
	last.spans = last.spans[:0]
	for _, r := range l.runs {
		last.spans = append(append(last.spans, hourfile.Span(text, fields, r.first, r.last)...), '\n')
	}
	last.spansOf = &l.runs[0]
}

// forgetLast forgets the last rows and the last tick's bucket, for a Follower that drops
// buckets: a row of a bucket dropped and made again must not go to the old one's group.
func (s *scan) forgetLast() {
	clear(s.lastByThread)
	s.prevRow, s.lastBucket, s.lastGroups = nil, nil, nil
}
