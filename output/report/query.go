// SPDX-License-Identifier: Apache-2.0

// Package report answers "what were the threads doing between 03:10 and 03:15?" from the
// hour files threadcap writes, without root and without loading them anywhere: it streams
// the files that cover the window, filters the rows, and sums them by group and by time,
// in memory that grows with the number of groups, never with the number of rows.
package report

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadcap/threadcap/output/schema"
)

// Query is what a report asks of the files.
type Query struct {
	Window Window
	// By are the columns rows are grouped by for the breakdown.
	By []string
	// Where keeps only rows that match: matches on one column are alternatives, matches on
	// different columns must all hold.
	Where []Match
	// Step, when not 0, asks for a timeline with buckets of this length instead of a
	// breakdown.
	Step time.Duration
	// Top is how many groups the breakdown lists; the rest are summed into one. 0 lists all.
	Top int
	// BucketGroups, with Step, also sums each bucket's rows by the By columns, into
	// Bucket.Groups (all of them, Top aside): what a view that narrows the window and
	// regroups without reading the files again needs.
	BucketGroups bool
	// BucketHist, with Step, names a column of microseconds (syscall_us, state_us) whose
	// values at the active sessions' rows each bucket counts in log2 buckets: Bucket.Hist.
	// Rows where it is empty (unknown) are left out.
	BucketHist string
}

// Match keeps rows whose Column holds exactly Value, as the value reads once unquoted (a
// process named "-bash" is matched by -bash, not by the '-bash the file holds).
type Match struct {
	Column, Value string
}

// ParseMatch reads a --where flag: column=value.
func ParseMatch(s string) (Match, error) {
	col, val, ok := strings.Cut(s, "=")
	col = strings.TrimSpace(col)
	if !ok || col == "" {
		return Match{}, fmt.Errorf("--where %q: write column=value, for example process=mysqld", s)
	}
	return Match{Column: col, Value: val}, nil
}

// Columns that the engine needs from every file.
const (
	colTime  = "sample_time"
	colState = "state"
	colOnCPU = "on_cpu_us"
	colSpan  = "span"
	colTid   = "tid"
)

// Steps a timeline can have.
const (
	StepMinute = time.Minute
	StepSecond = time.Second
)

// ParseStep reads a --timeline flag.
func ParseStep(s string) (time.Duration, error) {
	switch s {
	case "minute":
		return StepMinute, nil
	case "second":
		return StepSecond, nil
	}
	return 0, fmt.Errorf("--timeline %q: use minute or second", s)
}

// Validate reports every mistake in q at once. Columns are checked against the schema this
// binary writes; files are read by header name, so a file that lacks a column (older) or
// has more (newer) is still read, the missing column being empty.
func (q Query) Validate() error {
	var errs []error
	if !q.Window.From.Before(q.Window.To) {
		errs = append(errs, errors.New("the window is empty: its start is not before its end"))
	}
	if q.Top < 0 {
		errs = append(errs, fmt.Errorf("--top %d: use 0 for all groups, or a positive count", q.Top))
	}
	if q.BucketHist != "" && (q.Step == 0 || !knownColumns[q.BucketHist] || textColumns[q.BucketHist]) {
		errs = append(errs, fmt.Errorf("a histogram by bucket needs a timeline step and a numeric column, not %q", q.BucketHist))
	}
	if q.BucketGroups && q.Step == 0 {
		errs = append(errs, errors.New("groups by bucket need a timeline step"))
	}
	if q.Step < 0 {
		errs = append(errs, fmt.Errorf("timeline step %v is negative", q.Step))
	}
	if (q.Step == 0 || q.BucketGroups) && len(q.By) == 0 {
		errs = append(errs, errors.New("--by names no column; give at least one, for example state,syscall"))
	}
	for _, c := range q.columns() {
		if !knownColumns[c] {
			errs = append(errs, fmt.Errorf("there is no column %q; columns are: %s", c, KnownColumns()))
		}
	}
	if dup := duplicate(q.By); dup != "" {
		errs = append(errs, fmt.Errorf("--by names %s twice", dup))
	}
	return errors.Join(errs...)
}

func duplicate(names []string) string {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return n
		}
	}
	return ""
}

// read are the columns a scan for q reads of each row. A column the scan reads must be
// here: in a Parquet hour the others read as empty (hourfile.Reader.Only).
func (q Query) read() []string {
	return append(q.columns(), colTime, colState, colOnCPU, colSpan)
}

func (q Query) columns() []string {
	cols := slices.Clone(q.By)
	for _, m := range q.Where {
		cols = append(cols, m.Column)
	}
	if q.BucketHist != "" {
		cols = append(cols, q.BucketHist)
	}
	return cols
}

// knownColumns are the schema's column names.
var knownColumns = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range schema.Columns {
		m[c.Name] = true
	}
	return m
}()

// textColumns are the schema's VARCHAR columns, whose values may carry the leading ' that
// schema.AppendCSV adds to keep spreadsheets from running them as formulas.
var textColumns = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range schema.Columns {
		if c.Type == "VARCHAR" {
			m[c.Name] = true
		}
	}
	return m
}()

// KnownColumns lists the schema's columns, for error messages.
func KnownColumns() string {
	names := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
