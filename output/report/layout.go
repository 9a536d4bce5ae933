// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"errors"
	"slices"

	"github.com/threadcap/threadcap/output/hourfile"
)

// layout is where, in one file's records, the columns a query needs are. Files are read by
// header name, so a column added at the end by a later schema never moves the others, and
// a column an older file lacks (index -1) reads as empty.
type layout struct {
	time, state, onCPU, span int
	tidBy                    int // which of by is tid, -1 when none or the file lacks it (see group)
	hist                     int // the query's BucketHist column, -1 when none
	by                       []int
	byText                   []bool
	// runs are the By columns the file has, as runs of columns side by side in its
	// records, when tid is one of them (see lastRow.same).
	runs  []run
	where []matcher
}

// run is the columns first to last of a file's records.
type run struct{ first, last int }

// runsOf cuts columns, in any order and some perhaps -1 (not in the file), into runs of
// columns side by side, in the file's order.
func runsOf(columns []int) []run {
	sorted := slices.Sorted(slices.Values(columns))
	var runs []run
	for _, c := range slices.Compact(sorted) {
		switch {
		case c < 0:
		case len(runs) > 0 && runs[len(runs)-1].last+1 == c:
			runs[len(runs)-1].last = c
		default:
			runs = append(runs, run{c, c})
		}
	}
	return runs
}

// matcher is the --where matches on one column: any of values will do.
type matcher struct {
	column string
	idx    int
	text   bool
	values [][]byte
}

func (m matcher) matches(fields [][]byte) bool {
	v := value(fields, m.idx, m.text)
	for _, want := range m.values {
		if bytes.Equal(v, want) {
			return true
		}
	}
	return false
}

// layoutOf finds the query's columns in a file's header.
func (s *scan) layoutOf(header [][]byte) (layout, error) {
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = string(h)
	}
	l := layout{
		time:  slices.Index(names, colTime),
		state: slices.Index(names, colState),
		onCPU: slices.Index(names, colOnCPU),
		span:  slices.Index(names, colSpan),
		tidBy: -1,
		hist:  -1,
	}
	if s.q.BucketHist != "" {
		l.hist = slices.Index(names, s.q.BucketHist)
	}
	if l.time < 0 {
		return l, errors.New("not a threadcap hour file: its header has no sample_time column")
	}
	for _, c := range s.q.By {
		if c == colTid && slices.Contains(names, c) {
			l.tidBy = len(l.by)
		}
		l.by = append(l.by, slices.Index(names, c))
		l.byText = append(l.byText, textColumns[c])
	}
	if l.tidBy >= 0 {
		l.runs = runsOf(l.by)
	}
	for _, m := range s.q.Where {
		i := slices.IndexFunc(l.where, func(w matcher) bool { return w.column == m.Column })
		if i < 0 {
			l.where = append(l.where, matcher{column: m.Column, idx: slices.Index(names, m.Column), text: textColumns[m.Column]})
			i = len(l.where) - 1
		}
		l.where[i].values = append(l.where[i].values, []byte(m.Value))
	}
	return l, nil
}

// value is field idx of a record as its writer meant it: empty when the file has no such
// column, and without the leading ' that guards text against spreadsheet formulas.
func value(fields [][]byte, idx int, text bool) []byte {
	if idx < 0 {
		return nil
	}
	if text {
		return hourfile.Unguard(fields[idx])
	}
	return fields[idx]
}
