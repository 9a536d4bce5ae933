// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// Result is a report's answer.
type Result struct {
	Window Window
	Files  []string
	// Ticks is how many ticks fall in the window, whether any row passed the filter at
	// them or not: a filtered process's average is over all the window's ticks. They are
	// read from the hour's ticks file; an hour without one (written by a threadcap that
	// did not keep them) counts the distinct tick times of its rows, which misses the
	// ticks at which no thread at all had a row.
	Ticks int64
	// Rows counts the rows in the window that passed the filter and are active sessions
	// (schema.Session: on CPU, runnable or uninterruptible at the tick, or inside a span):
	// they are what the averages count.
	Rows int64
	// Exited counts the rows of threads that had exited by their tick: a thread shows once
	// more in state dead after it exits, with the times of its last interval. Its CPU time
	// is in CPUUs, but it is not an active thread.
	Exited int64
	// Inactive counts the other rows that are not active sessions: threads asleep or
	// stopped at the tick outside a span (a thread that ran since the previous tick, or
	// any thread with --all). Their CPU time is in CPUUs.
	Inactive int64
	CPUUs    int64 // the on_cpu_us of every row that passed the filter, inactive and exited too
	// Malformed counts rows skipped because they are not valid CSV, have the wrong number
	// of fields, or an unreadable time or number: the sum of Damaged's Lost.
	Malformed int64
	// Damaged lists the files of the window read in part or not at all (samples and
	// ticks), and what was lost of each.
	Damaged  []FileDamage
	By       []string
	Groups   []Group // the Top groups, most active first
	Other    Group   // the groups past Top, summed; Other.Count says how many
	Step     time.Duration
	Timeline []Bucket // in time order, when Step is set
}

// Group is the rows that share the values of the By columns.
type Group struct {
	Values   []string // one per By column
	Rows     int64    // active sessions, as in Result
	CPUUs    int64    // of every row, inactive and exited threads' included
	Count    int      // in Result.Other, how many groups it sums; 1 otherwise
	Inactive int64    // rows neither active sessions nor exited threads', as in Result
}

// Bucket is a slice of the timeline.
type Bucket struct {
	Start time.Time
	Ticks int64
	// Rows counts the active sessions by what they do at the tick, in the order of
	// TimelineStates; other rows are not among them, but their CPU time is in CPUUs.
	Rows  [len(timelineStates)]int64
	CPUUs int64
	// Groups are the bucket's rows by the By columns, most active first, when the query
	// asked for BucketGroups.
	Groups []Group
	// Hist counts the active sessions' values of the query's BucketHist column, in the log2
	// buckets of the spans and io files' histograms.
	Hist [HistBuckets]int64
	// exited and inactive count the rows of Result's Exited and Inactive, for a Follower.
	exited, inactive int64
}

// timelineStates are the kinds of active session a timeline splits rows by
// (schema.SessionName's), then other: a row inside a span in a state this binary does not
// know.
var timelineStates = func() (names [schema.SessionKinds + 1]string) {
	for k := range schema.SessionKinds {
		names[k] = schema.SessionName(k)
	}
	names[schema.SessionKinds] = "other"
	return names
}()

// deadState is the state of an exited thread's last row.
var deadState = []byte(state.Dead.String())

// states are the states by name, as rows hold them.
var states = func() map[string]state.State {
	m := map[string]state.State{}
	for s := range state.Dead + 1 {
		m[s.String()] = s
	}
	return m
}()

// sessionOf says what kind of active session a row of state st, inside a span or not, is
// (an index into timelineStates); false when it is not one.
func sessionOf(st []byte, inSpan bool) (int, bool) {
	s, known := states[string(st)]
	if !known {
		return schema.SessionKinds, inSpan
	}
	return schema.Session(s, inSpan)
}

// TimelineStates names the entries of Bucket.Rows.
func TimelineStates() []string { return timelineStates[:] }

// Average is how many threads were, on average over ticks, in the rows counted by rows.
func Average(rows, ticks int64) float64 {
	if ticks == 0 {
		return 0
	}
	return float64(rows) / float64(ticks)
}

// Run answers q from the hour files in dir, reading only those that overlap the window.
func Run(dir string, q Query) (*Result, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	files, err := FilesFor(dir, q.Window)
	if err != nil {
		return nil, err
	}
	ticks, err := tickFilesFor(dir, files)
	if err != nil {
		return nil, err
	}
	s := newScan(q)
	// Hour by hour: an hour's ticks come from its ticks file when it is whole.
	for i := 0; i < len(files); {
		hour := files[i].Hour
		damaged := len(s.res.Damaged)
		for _, path := range ticks[hour] {
			if err := s.ticksFile(path); err != nil {
				return nil, err
			}
		}
		whole := len(ticks[hour]) > 0 && len(s.res.Damaged) == damaged
		for ; i < len(files) && files[i].Hour.Equal(hour); i++ {
			if err := s.file(files[i].Path); err != nil {
				return nil, err
			}
		}
		s.endHour(whole)
	}
	return s.result(files), nil
}

// scan holds the running sums of one report.
type scan struct {
	q         Query
	res       Result
	groups    map[string]*Group
	buckets   map[int64]*Bucket
	byBucket  map[*Bucket]map[string]*Group // the groups of each bucket, for BucketGroups
	key       []byte
	lastRaw   []byte    // the last sample_time field parsed, as written
	lastTime  time.Time // and its value
	lastTick  time.Time // the last tick counted
	lastValid bool
	// lastBucket and lastGroups are lastTime's bucket and its groups, once looked up.
	lastBucket *Bucket
	lastGroups map[string]*Group
	// lastByThread is where each thread's last row went, prevRow the previous row's thread
	// (see group).
	lastByThread map[int64]*lastRow
	prevRow      *lastRow
	// fileTicks and rowTicks count the current hour's ticks from its ticks file and from
	// the times of its rows (see endHour).
	fileTicks, rowTicks tickCount
}

func newScan(q Query) *scan {
	return &scan{q: q, groups: map[string]*Group{}, buckets: map[int64]*Bucket{}, lastByThread: map[int64]*lastRow{}}
}

// file streams one hour file into the sums.
func (s *scan) file(path string) error {
	var l layout
	lost, err := readFile(path, &s.res.Damaged, s.q.read(), func(header [][]byte) (err error) {
		l, err = s.layoutOf(header)
		return err
	}, func(fields [][]byte, text []byte) bool {
		return s.row(&l, fields, text)
	})
	s.res.Malformed += lost
	return err
}

// row adds one record, and its line when that holds no quote (hourfile.Reader.Text); false
// when it is malformed.
func (s *scan) row(l *layout, fields [][]byte, text []byte) bool {
	raw := fields[l.time]
	if !s.lastValid || !bytes.Equal(raw, s.lastRaw) {
		t, err := time.Parse(time.RFC3339Nano, string(raw))
		if err != nil {
			return false
		}
		s.lastRaw, s.lastTime, s.lastValid = append(s.lastRaw[:0], raw...), t, true
		s.lastBucket, s.lastGroups = nil, nil
	}
	t := s.lastTime
	if !s.q.Window.Contains(t) {
		return true
	}
	var b *Bucket
	if s.q.Step > 0 {
		// Looked up once a tick: a tick's rows are all in one bucket.
		if s.lastBucket == nil {
			s.lastBucket = s.bucket(t)
		}
		b = s.lastBucket
	}
	// A tick's rows are written together, so a new time is a new tick.
	if !t.Equal(s.lastTick) {
		s.lastTick = t
		s.rowTicks.add(b)
	}
	for _, m := range l.where {
		if !m.matches(fields) {
			return true
		}
	}
	cpu, ok := atoi(value(fields, l.onCPU, false))
	if !ok {
		return false
	}
	// Every row's CPU time counts; only active sessions count in the averages. An exited
	// thread's row carries the CPU time of its last interval, and the thread, gone at the
	// tick, is not an active session then.
	st := value(fields, l.state, false)
	kind, isSession := sessionOf(st, len(value(fields, l.span, false)) > 0)
	var active, inactive int64
	switch {
	case isSession:
		active = 1
	case bytes.Equal(st, deadState):
		s.res.Exited++
		if b != nil {
			b.exited++
		}
	default:
		inactive = 1
	}
	s.res.Rows += active
	s.res.Inactive += inactive
	s.res.CPUUs += cpu
	if b != nil {
		if isSession {
			b.Rows[kind]++
			addToHist(b, value(fields, l.hist, false))
		}
		b.CPUUs += cpu
		b.inactive += inactive
		if !s.q.BucketGroups {
			return true
		}
	}
	groups := s.groups
	if b != nil {
		if s.lastGroups == nil {
			s.lastGroups = s.bucketGroups(b)
		}
		groups = s.lastGroups
	}
	g := s.group(l, fields, text, b, groups)
	g.Rows += active
	g.Inactive += inactive
	g.CPUUs += cpu
	return true
}

// lookUp returns the group of a row's By values in groups, made on first use.
func (s *scan) lookUp(l *layout, fields [][]byte, groups map[string]*Group) *Group {
	s.key = s.key[:0]
	for i, idx := range l.by {
		// NUL separates values: schema.AppendCSV never writes one.
		s.key = append(append(s.key, value(fields, idx, l.byText[i])...), 0)
	}
	g := groups[string(s.key)]
	if g == nil {
		// The values are cut from the key: one string for them all.
		key := string(s.key)
		g = &Group{Values: make([]string, len(l.by)), Count: 1}
		rest := key
		for i, idx := range l.by {
			n := len(value(fields, idx, l.byText[i]))
			g.Values[i], rest = rest[:n], rest[n+1:]
		}
		groups[key] = g
	}
	return g
}

// ticksFile counts the ticks of one ticks file that fall in the window.
func (s *scan) ticksFile(path string) error {
	lost, err := readFile(path, &s.res.Damaged, nil, func(header [][]byte) error {
		if len(header) != 1 || string(header[0]) != colTime {
			return fmt.Errorf("not a ticks file: its header is not %s", colTime)
		}
		return nil
	}, func(fields [][]byte, _ []byte) bool { return s.tick(fields) })
	s.res.Malformed += lost
	return err
}

// tick counts one line of a ticks file, if it falls in the window; false when it is
// malformed.
func (s *scan) tick(fields [][]byte) bool {
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return false
	}
	if s.q.Window.Contains(t) {
		var b *Bucket
		if s.q.Step > 0 {
			b = s.bucket(t)
		}
		s.fileTicks.add(b)
	}
	return true
}

func (s *scan) bucket(t time.Time) *Bucket {
	start := t.Truncate(s.q.Step)
	b := s.buckets[start.UnixNano()]
	if b == nil {
		// Shown in the zone the window was given in, whatever offset the file was written with.
		b = &Bucket{Start: start.In(s.q.Window.From.Location())}
		s.buckets[start.UnixNano()] = b
	}
	return b
}

// atoi reads a decimal integer field; an empty field (unknown) is 0.
func atoi(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > (1<<63-1)/10-1 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// result sorts the groups and buckets.
func (s *scan) result(files []hourfile.File) *Result {
	r := s.res
	r.Window, r.By, r.Step = s.q.Window, s.q.By, s.q.Step
	for _, f := range files {
		r.Files = append(r.Files, f.Path)
	}
	for _, g := range s.groups {
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, mostActive)
	if s.q.Top > 0 && len(r.Groups) > s.q.Top {
		for _, g := range r.Groups[s.q.Top:] {
			r.Other.Rows += g.Rows
			r.Other.Inactive += g.Inactive
			r.Other.CPUUs += g.CPUUs
			r.Other.Count++
		}
		r.Groups = r.Groups[:s.q.Top]
	}
	for _, b := range s.buckets {
		b.Groups = sortedGroups(s.byBucket[b])
		r.Timeline = append(r.Timeline, *b)
	}
	slices.SortFunc(r.Timeline, func(a, b Bucket) int { return a.Start.Compare(b.Start) })
	return &r
}
