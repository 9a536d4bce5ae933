// SPDX-License-Identifier: Apache-2.0

package html

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadcap/threadcap/output/report"
)

// Columns is what the page can group, stack and filter by, in the order a click on a group
// drills down: each click filters on the group and regroups by the next column.
var Columns = []string{"state", "syscall", "wchan", "process", "span", "io_dev", "container", "unit", "cgroup", "user"}

// threadColumns name a thread in the swimlanes; stackColumns hold the stacks of the flame
// graph. With Columns they are the page's cube: every row of the window is summed by all
// of them, per bucket, so that the page can narrow and regroup without the files.
var (
	threadColumns = [...]string{"tid", "pid", "thread", "cmdline"}
	stackColumns  = []string{"kernel_stack", "user_stack"}
)

// cubeColumns is the By of the one query the page is made from.
func cubeColumns() []string {
	return slices.Concat(Columns, threadColumns[:], stackColumns)
}

// steps are the lengths a page's buckets can have.
var steps = []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute,
	5 * time.Minute, 15 * time.Minute, time.Hour}

// maxBuckets bounds the buckets of a window: enough for a chart to show the shape of an
// incident, few enough that the page's size grows with the threads, not with the window.
const maxBuckets = 120

// Step is the length of the page's buckets for a window: the shortest of steps that cuts
// it into at most maxBuckets (ten seconds in 100 ms buckets, an hour in minutes).
func Step(w report.Window) time.Duration {
	for _, s := range steps {
		if w.Duration() <= s*maxBuckets {
			return s
		}
	}
	return steps[len(steps)-1]
}

// page is what the page's script gets, as JSON: aggregates, never rows.
type page struct {
	Version string `json:"version"`
	Host    string `json:"host"`
	// HostNote says where Host and CPUs come from when the files do not name them.
	HostNote string         `json:"host_note,omitempty"`
	CPUs     int            `json:"cpus"`
	From     string         `json:"from"`
	To       string         `json:"to"`
	StepMs   int64          `json:"step_ms"`
	Files    []string       `json:"files"`
	Where    []report.Match `json:"where"` // the command line's filters, already applied
	Lacks    []string       `json:"lacks"`
	Empty    string         `json:"empty,omitempty"`
	Columns  []string       `json:"columns"` // the drill-down order
	Cube     cube           `json:"cube"`
	States   []string       `json:"states"`
	// Frames are the stacks' frames by hash.
	Frames   map[string]string `json:"frames"`
	Heatmaps []heatmap         `json:"heatmaps"`
}

// cube is the window's rows summed by bucket and by every cube column. Values are
// dictionary-coded: a cell holds the bucket's index, the index of its value of each of Dims
// in Values, the index of its thread in Threads, then rows (active sessions' rows, as
// report counts them) and CPU µs. A thread's columns (ThreadDims) are coded once in
// Threads, not in each of its cells.
type cube struct {
	Dims []string `json:"dims"`
	// Values has a list for each of Dims, then one for each of ThreadDims.
	Values     [][]string `json:"values"`
	ThreadDims []string   `json:"thread_dims"`
	// Threads are indices into Values' lists of ThreadDims.
	Threads [][]int64 `json:"threads"`
	Buckets []bucket  `json:"buckets"`
	Cells   [][]int64 `json:"cells"`
}

type bucket struct {
	// Start and End bound the bucket within the window, as --from and --to take them.
	Start string `json:"start"`
	End   string `json:"end"`
	Ticks int64  `json:"ticks"`
	// Hist counts the active threads' syscall_us at the bucket's ticks: [log2 bucket, count].
	Hist [][2]int64 `json:"hist,omitempty"`
}

// buildCube turns a timeline with bucket groups by cubeColumns into the cube.
func buildCube(r *report.Result) cube {
	// Empty lists, not null, for the script.
	c := cube{Dims: slices.Concat(Columns, stackColumns), ThreadDims: threadColumns[:], Threads: [][]int64{},
		Buckets: []bucket{}, Cells: [][]int64{}}
	lists := len(c.Dims) + len(c.ThreadDims)
	c.Values = make([][]string, lists)
	index := make([]map[string]int64, lists)
	for i := range index {
		index[i] = map[string]int64{}
		c.Values[i] = []string{}
	}
	// list is where each of r.By's values goes: its list of Values.
	list := make([]int, len(r.By))
	for i, col := range r.By {
		if k := slices.Index(c.Dims, col); k >= 0 {
			list[i] = k
		} else {
			list[i] = len(c.Dims) + slices.Index(c.ThreadDims, col)
		}
	}
	code := func(l int, v string) int64 {
		n, ok := index[l][v]
		if !ok {
			n = int64(len(c.Values[l]))
			index[l][v] = n
			c.Values[l] = append(c.Values[l], v)
		}
		return n
	}
	threads := map[[len(threadColumns)]int64]int64{}
	// A thread's values repeat in its cells of every bucket, and a column's value often in
	// the cell before: both are remembered, to code each value once rather than once a cell.
	// at is where each thread column is in r.By; threads are known by tid.
	var at [len(threadColumns)]int
	for i := range at {
		at[i] = slices.Index(r.By, threadColumns[i])
	}
	type coded struct {
		values [len(threadColumns)]string
		ref    int64
	}
	known := map[string]*coded{} // by tid
	type last struct {
		v  string
		n  int64
		ok bool
	}
	lasts := make([]last, len(c.Dims))
	// The cells' numbers, in one array: a cell is its bucket, its Dims, its thread, its sums.
	width, cells := 1+len(c.Dims)+3, 0
	for _, b := range r.Timeline {
		cells += len(b.Groups)
	}
	ints := make([]int64, cells*width)
	c.Cells = make([][]int64, 0, cells)
	for bi, b := range r.Timeline {
		start, end := b.Start, b.Start.Add(r.Step)
		start = later(start, r.Window.From)
		if r.Window.To.Before(end) {
			end = r.Window.To
		}
		bk := bucket{Start: stamp(start, r.Window), End: stamp(end, r.Window), Ticks: b.Ticks}
		for k, n := range b.Hist {
			if n > 0 {
				bk.Hist = append(bk.Hist, [2]int64{int64(k), n})
			}
		}
		c.Buckets = append(c.Buckets, bk)
		for _, g := range b.Groups {
			cell := ints[:width:width]
			ints = ints[width:]
			cell[0] = int64(bi)
			var values [len(threadColumns)]string
			for i, k := range at {
				if k >= 0 {
					values[i] = g.Values[k]
				}
			}
			seen := known[values[0]]
			if seen != nil && seen.values != values {
				seen = nil
			}
			var thread [len(threadColumns)]int64
			for i, v := range g.Values {
				l := list[i]
				switch {
				case l >= len(c.Dims):
					// Coded already when the thread was seen.
					if seen == nil {
						thread[l-len(c.Dims)] = code(l, v)
					}
				case lasts[l].ok && lasts[l].v == v:
					cell[1+l] = lasts[l].n
				default:
					cell[1+l] = code(l, v)
					lasts[l] = last{v, cell[1+l], true}
				}
			}
			var ref int64
			if seen != nil {
				ref = seen.ref
			} else {
				var ok bool
				if ref, ok = threads[thread]; !ok {
					ref = int64(len(c.Threads))
					threads[thread] = ref
					c.Threads = append(c.Threads, slices.Clone(thread[:]))
				}
				known[values[0]] = &coded{values, ref}
			}
			cell[1+len(c.Dims)], cell[2+len(c.Dims)], cell[3+len(c.Dims)] = ref, g.Rows, g.CPUUs
			c.Cells = append(c.Cells, cell)
		}
	}
	return c
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// stamp writes a time as --from and --to read it back, in the window's zone.
func stamp(t time.Time, w report.Window) string {
	return t.In(w.From.Location()).Format(time.RFC3339Nano)
}

// heatmap is a latency histogram per minute: Cells are [minute index, log2 bucket, count].
type heatmap struct {
	Title   string    `json:"title"`
	Minutes []string  `json:"minutes"`
	Cells   [][]int64 `json:"cells"`
}

// heatmaps reads the spans' wall time and the disks' device time, minute by minute, from
// the spans and io files through report.Latency. A window without either file has none;
// lacks says so.
func heatmaps(dir string, w report.Window) ([]heatmap, []string) {
	whole, err := report.Latency(dir, w)
	if err != nil {
		return nil, []string{"spans and block I/O latencies: no spans or io file covers the window"}
	}
	var lacks []string
	if len(whole.Damaged) > 0 {
		lacks = report.DamageLines(whole.Damaged)
	}
	spans := heatmap{Title: "Spans' wall time"}
	disks := heatmap{Title: "Disks' device time"}
	for m := w.From.Truncate(time.Minute); m.Before(w.To); m = m.Add(time.Minute) {
		lat, err := report.Latency(dir, report.Window{From: m, To: m.Add(time.Minute)})
		if err != nil {
			continue
		}
		label := stamp(m, w)
		add := func(h *heatmap, hist []uint64) {
			if len(h.Minutes) == 0 || h.Minutes[len(h.Minutes)-1] != label {
				h.Minutes = append(h.Minutes, label)
			}
			for b, n := range hist {
				if n > 0 {
					h.Cells = append(h.Cells, []int64{int64(len(h.Minutes) - 1), int64(b), int64(n)})
				}
			}
		}
		for _, s := range lat.Spans {
			add(&spans, s.WallHist[:])
		}
		for _, d := range lat.Disks {
			add(&disks, d.DeviceHist[:])
		}
	}
	var out []heatmap
	for _, h := range []heatmap{spans, disks} {
		if len(h.Cells) > 0 {
			h.Cells = mergeCells(h.Cells)
			out = append(out, h)
		} else {
			lacks = append(lacks, strings.ToLower(h.Title[:1])+h.Title[1:]+": none in the window")
		}
	}
	return out, lacks
}

// mergeCells sums the cells of one minute and bucket (several spans or disks).
func mergeCells(cells [][]int64) [][]int64 {
	slices.SortFunc(cells, func(a, b []int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	out := cells[:0]
	for _, c := range cells {
		if n := len(out); n > 0 && out[n-1][0] == c[0] && out[n-1][1] == c[1] {
			out[n-1][2] += c[2]
			continue
		}
		out = append(out, c)
	}
	return out
}

// errNoFiles tells an empty window from a directory with no recording at all.
var errNoFiles = errors.New("no hour files")

// emptyWindow reports whether dir holds hour files but none for w: a window to say is
// empty, where report errs.
func emptyWindow(dir string, w report.Window) (bool, error) {
	if _, err := report.FilesFor(dir, w); err == nil {
		return false, nil
	}
	all, err := report.ListHourFiles(dir)
	if err != nil {
		return false, err
	}
	if len(all) == 0 {
		return false, fmt.Errorf("%w in %s; give the directory threadcap writes to with --dir", errNoFiles, dir)
	}
	return true, nil
}
