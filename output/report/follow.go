// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
)

// Follower answers one grouping and filter of the rows (a Query's By and Where) over
// windows that move forward in time, as top's live mode asks each second, reading each row
// of the files once: it keeps the rows summed per second from the earliest second asked
// for on, and each call reads only what the files gained since the one before. The hour
// being written is a plain CSV file that grows at its end: its reader stays open and goes
// on where it stopped, also once the writer has compressed the hour (the copy holds the
// same rows, and is not read). A file that shows up whole (compressed, Parquet) is read
// once.
//
// Its memory is the context's seconds and the window's groups in each second.
//
// Its answers are Run's for the same windows when they start and end on whole seconds and
// every hour read has a whole ticks file, as threadcap writes them. An hour without one
// has its ticks counted as Run counts them, from its rows too, but per call rather than
// per hour. Damage is what was found since the follower started.
type Follower struct {
	dir   string
	mu    sync.Mutex
	s     *scan
	files map[string]*followed // by path: every file of the seconds kept
	// groupsFrom is the first second whose groups are kept: the seconds before it, in the
	// context only, keep their sums; zero before the first call.
	groupsFrom time.Time
}

// followed is one file a Follower reads.
type followed struct {
	name  hourfile.Name
	r     *hourfile.Reader // open while the file may grow; nil once read to its end
	l     layout
	lost  int64 // of r's, counted in the damage so far
	ticks bool  // a ticks file
	// damaged says some of the file could not be read: for a ticks file, that the hour's
	// ticks are counted from its rows too.
	damaged bool
}

// NewFollower follows the rows of the hour files in dir, grouped by by and kept by where.
func NewFollower(dir string, by []string, where []Match) (*Follower, error) {
	q := Query{By: by, Where: where, Step: time.Second, BucketGroups: true,
		Window: Window{From: time.Unix(0, 0), To: never}} // From is set by each call
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return &Follower{dir: dir, s: newScan(q), files: map[string]*followed{}}, nil
}

// never is the end of the window a follower's scan keeps rows of: the rows to come.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Answer reads what the files gained, then sums the rows of window by the follower's
// columns (Run's answer with that window, By and Where) and the rows of context in a
// timeline of step (Run's with that window and Step, and no By): what top's table and
// chart show. Seconds before the earlier of the two starts are forgotten; asking for an
// earlier one later reads the files again from their start.
func (f *Follower) Answer(window, context Window, step time.Duration) (breakdown, timeline *Result, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := (Query{Window: window, By: f.s.q.By}).Validate(); err != nil {
		return nil, nil, err
	}
	if step < time.Second || step%time.Second != 0 {
		return nil, nil, errors.New("a live timeline's step is whole seconds")
	}
	span := Window{From: minTime(window.From, context.From), To: maxTime(window.To, context.To)}
	if f.groupsFrom.IsZero() || span.From.Before(f.s.q.Window.From) || window.From.Before(f.groupsFrom) {
		f.restart(span.From)
	}
	files, err := FilesFor(f.dir, span)
	if err != nil {
		return nil, nil, err
	}
	ticks, err := tickFilesFor(f.dir, files)
	if err != nil {
		return nil, nil, err
	}
	if err := f.read(files, ticks); err != nil {
		return nil, nil, err
	}
	f.forget(span.From, window.From)
	return f.breakdown(window, files), f.timeline(context, step, files), nil
}

// Close closes the files the follower holds open.
func (f *Follower) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restart(f.s.q.Window.From)
}

// restart forgets everything read: the rows kept start at from.
func (f *Follower) restart(from time.Time) {
	for _, fl := range f.files {
		if fl.r != nil {
			fl.r.Close()
		}
	}
	clear(f.files)
	q := f.s.q
	q.Window = Window{From: from, To: never}
	f.s = newScan(q)
	f.groupsFrom = from
}

// read reads what the files of each hour gained, the hour's ticks first, as Run does.
func (f *Follower) read(files []hourfile.File, ticks map[time.Time][]string) error {
	listed := map[string]bool{}
	for _, fl := range files {
		listed[fl.Path] = true
	}
	for _, paths := range ticks {
		for _, p := range paths {
			listed[p] = true
		}
	}
	for i := 0; i < len(files); {
		hour := files[i].Hour
		var samples []string
		for ; i < len(files) && files[i].Hour.Equal(hour); i++ {
			samples = append(samples, files[i].Path)
		}
		// A file being read when the writer compressed it is read to its end, not its copy.
		hourTicks := ticks[hour]
		for path, fl := range f.files {
			if fl.r != nil && fl.name.Hour.Equal(hour) && !listed[path] {
				if fl.ticks {
					hourTicks = append(hourTicks, path)
				} else {
					samples = append(samples, path)
				}
			}
		}
		whole := len(hourTicks) > 0
		for _, path := range hourTicks {
			fl, err := f.file(path, true, listed)
			if err != nil {
				return err
			}
			whole = whole && (fl == nil || !fl.damaged) // nil: a copy, or nothing written yet
		}
		for _, path := range samples {
			if _, err := f.file(path, false, listed); err != nil {
				return err
			}
		}
		f.s.endHour(whole)
	}
	return nil
}

// file reads what the file at path gained, opening it when it is new; nil when it is not
// read: it has no header yet, or it is the compressed (or Parquet) copy of a file
// followed, which the writer has since removed.
func (f *Follower) file(path string, isTicks bool, listed map[string]bool) (*followed, error) {
	fl := f.files[path]
	if fl == nil {
		_, name, ok := hourfile.ParsePath(path)
		if ok && f.replaced(name, listed) {
			return nil, nil
		}
		r, err := hourfile.OpenReader(path)
		if errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		fl = &followed{name: name, ticks: isTicks}
		switch {
		case err != nil:
			fl.damaged = true
			f.s.res.Damaged = append(f.s.res.Damaged, FileDamage{File: path, NotRead: err.Error()})
		case r.Header() == nil:
			r.Close() // just created: read from its header on at the next call
			return nil, nil
		default:
			fl.r = r
			if !isTicks {
				if fl.l, err = f.s.layoutOf(r.Header()); err != nil {
					r.Close()
					fl.r, fl.damaged = nil, true
					f.s.res.Damaged = append(f.s.res.Damaged, FileDamage{File: path, NotRead: err.Error()})
				}
			} else if h := r.Header(); len(h) != 1 || string(h[0]) != colTime {
				r.Close()
				fl.r, fl.damaged = nil, true
				f.s.res.Damaged = append(f.s.res.Damaged, FileDamage{File: path, NotRead: "not a ticks file: its header is not " + colTime})
			}
		}
		f.files[path] = fl
	}
	if fl.r == nil {
		return fl, nil
	}
	fl.r.Follow()
	for {
		fields, ok := fl.r.Next()
		if !ok {
			break
		}
		good := false
		if fl.ticks {
			good = f.s.tick(fields)
		} else {
			good = f.s.row(&fl.l, fields, fl.r.Text())
		}
		if !good {
			fl.r.Reject()
		}
	}
	f.damage(path, fl)
	// Gone from the directory (compressed, or deleted): it has been written to its end.
	if fl.r.Tail() != nil || !listed[path] || !strings.HasSuffix(path, hourfile.CSV) {
		fl.r.Close()
		fl.r = nil
	}
	return fl, nil
}

// replaced says whether a file named name is another copy of the rows of a file followed
// that has left the directory: the same kind and hour, compressed or converted since.
func (f *Follower) replaced(name hourfile.Name, listed map[string]bool) bool {
	for path, fl := range f.files {
		if fl.name.Kind == name.Kind && fl.name.Hour.Equal(name.Hour) && !listed[path] {
			return true
		}
	}
	return false
}

// damage adds what the read of fl lost to the damage found so far, one entry a file.
func (f *Follower) damage(path string, fl *followed) {
	lost := fl.r.Lost() - fl.lost
	fl.lost = fl.r.Lost()
	tail := fl.r.Tail()
	if lost == 0 && tail == nil {
		return
	}
	fl.damaged = true
	f.s.res.Malformed += lost
	i := slices.IndexFunc(f.s.res.Damaged, func(d FileDamage) bool { return d.File == path })
	if i < 0 {
		f.s.res.Damaged = append(f.s.res.Damaged, FileDamage{File: path})
		i = len(f.s.res.Damaged) - 1
	}
	f.s.res.Damaged[i].Lost += lost
	if tail != nil {
		f.s.res.Damaged[i].Tail = tail.Error()
	}
}

// forget drops the seconds before from and the groups of those before groupsFrom, and
// closes the files of hours that end by from.
func (f *Follower) forget(from, groupsFrom time.Time) {
	for key, b := range f.s.buckets {
		if b.Start.Before(from) {
			delete(f.s.buckets, key)
		}
		if b.Start.Before(groupsFrom) {
			delete(f.s.byBucket, b)
		}
	}
	f.s.forgetLast()
	f.groupsFrom = maxTime(groupsFrom, from)
	for path, fl := range f.files {
		if !fl.name.Hour.Add(time.Hour).After(from) {
			if fl.r != nil {
				fl.r.Close()
			}
			delete(f.files, path)
		}
	}
	f.s.q.Window.From = from
}

// seconds are the seconds kept that fall in w, in time order.
func (f *Follower) seconds(w Window) []*Bucket {
	var in []*Bucket
	for _, b := range f.s.buckets {
		if w.Contains(b.Start) {
			in = append(in, b)
		}
	}
	slices.SortFunc(in, func(a, b *Bucket) int { return a.Start.Compare(b.Start) })
	return in
}

// answer starts a result over w: the files that cover it and the damage found so far.
func (f *Follower) answer(w Window, files []hourfile.File) *Result {
	r := &Result{Window: w, Malformed: f.s.res.Malformed, Damaged: slices.Clone(f.s.res.Damaged)}
	for _, fl := range files {
		if fl.Hour.Before(w.To) && fl.Hour.Add(time.Hour).After(w.From) {
			r.Files = append(r.Files, fl.Path)
		}
	}
	return r
}

// add counts second b in r's totals.
func (r *Result) add(b *Bucket) {
	r.Ticks += b.Ticks
	for _, n := range b.Rows {
		r.Rows += n
	}
	r.CPUUs += b.CPUUs
	r.Exited += b.exited
	r.Inactive += b.inactive
}

// breakdown is the rows of window by the follower's columns.
func (f *Follower) breakdown(window Window, files []hourfile.File) *Result {
	r := f.answer(window, files)
	r.By = f.s.q.By
	groups := map[string]*Group{}
	for _, b := range f.seconds(window) {
		r.add(b)
		for key, g := range f.s.byBucket[b] {
			sum := groups[key]
			if sum == nil {
				sum = &Group{Values: g.Values, Count: 1}
				groups[key] = sum
			}
			sum.Rows += g.Rows
			sum.CPUUs += g.CPUUs
			sum.Inactive += g.Inactive
		}
	}
	r.Groups = sortedGroups(groups)
	return r
}

// timeline is the rows of context in buckets of step.
func (f *Follower) timeline(context Window, step time.Duration, files []hourfile.File) *Result {
	r := f.answer(context, files)
	r.Step = step
	buckets := map[int64]*Bucket{}
	for _, b := range f.seconds(context) {
		r.add(b)
		start := b.Start.Truncate(step)
		sum := buckets[start.UnixNano()]
		if sum == nil {
			sum = &Bucket{Start: start}
			buckets[start.UnixNano()] = sum
		}
		sum.Ticks += b.Ticks
		for k, n := range b.Rows {
			sum.Rows[k] += n
		}
		sum.CPUUs += b.CPUUs
		sum.exited += b.exited
		sum.inactive += b.inactive
		for k, n := range b.Hist {
			sum.Hist[k] += n
		}
	}
	for _, key := range slices.Sorted(maps.Keys(buckets)) {
		r.Timeline = append(r.Timeline, *buckets[key])
	}
	return r
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
