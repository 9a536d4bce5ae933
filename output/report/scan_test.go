// SPDX-License-Identifier: Apache-2.0

package report

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// start is the first tick of the fixtures: 14:00 UTC, 15:00 in Paris.
var start = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// thread returns a row for the fixture threads.
func thread(tick time.Time, pid int32, process string, st state.State, syscall string, onCPUUs int64) state.Sample {
	s := state.Sample{
		Time: tick, Pid: pid, Tid: pid, Process: process, Thread: process, User: "root", State: st,
		StateUs: 1000, Syscall: syscall, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown, CPU: 0,
		Voluntary: 1, Involuntary: 0, Exe: "/usr/bin/" + process,
	}
	s.StateTimeUs[state.OnCPU] = onCPUUs
	if syscall != "" {
		s.SyscallUs = 1000
	}
	return s
}

// tickRows is one tick of the fixture: a spinner always on CPU, a shell always asleep in
// wait4 (not an active session), a backend always asleep in semop inside a lock_wait span
// (an active session), and a database thread in D state in pread64, reading nvme0n1, at
// every other tick.
func tickRows(tick time.Time, i int) []state.Sample {
	backend := thread(tick, 400, "postgres", state.Sleeping, "semop", 0)
	backend.Span, backend.SpanUs, backend.SpanArg = "lock_wait", 1000, "LOCK TABLE t"
	rows := []state.Sample{
		thread(tick, 100, "spin", state.OnCPU, "", 1_000_000),
		thread(tick, 200, "-bash", state.Sleeping, "wait4", 0),
		backend,
	}
	if i%2 == 0 {
		db := thread(tick, 300, "mysqld", state.Uninterruptible, "pread64", 2_000)
		db.IODev, db.IOOp, db.IOBytes, db.IOUs, db.IOQueueUs = "nvme0n1", "read", 8192, 900, 3
		rows = append(rows, db)
	}
	return rows
}

// writeTicks writes n one-second ticks from first with output.Writer, compressing closed
// hours with compress, and returns the directory once the files named in compressed exist.
func writeTicks(t *testing.T, first time.Time, n int, compress string, compressed ...string) string {
	t.Helper()
	return writeRows(t, first, n, tickRows, compress, compressed...)
}

// writeRows is writeTicks with the rows of tick i from rowsOf.
func writeRows(t *testing.T, first time.Time, n int, rowsOf func(time.Time, int) []state.Sample, compress string, compressed ...string) string {
	t.Helper()
	dir := t.TempDir()
	var clock atomic.Int64 // read by the writer's background work
	clock.Store(first.UnixNano())
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Compress: compress, Clock: func() time.Time { return time.Unix(0, clock.Load()) },
		Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		tick := first.Add(time.Duration(i) * time.Second)
		clock.Store(tick.UnixNano())
		if err := w.Write(tick, rowsOf(tick, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range compressed {
		waitFor(t, filepath.Join(dir, name))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func query(by string, where ...string) Query {
	q := Query{Window: Window{From: start, To: start.Add(time.Hour)}, By: strings.Split(by, ",")}
	for _, w := range where {
		m, _ := ParseMatch(w)
		q.Where = append(q.Where, m)
	}
	return q
}

// summary is a group as a test states it.
type summary struct {
	values string
	avg    float64
	cpuS   float64
}

func summarize(r *Result) []summary {
	var out []summary
	for _, g := range r.Groups {
		out = append(out, summary{strings.Join(g.Values, "/"), Average(g.Rows, r.Ticks), seconds(g.CPUUs)})
	}
	return out
}

func TestBreakdown(t *testing.T) {
	dir := writeTicks(t, start, 10, output.CompressNone)
	for _, tc := range []struct {
		name string
		q    Query
		want []summary
	}{
		// The shell asleep outside a span is no active session; the backend asleep in its
		// span is one.
		{"by state and syscall", query("state,syscall"), []summary{
			{"on_cpu/", 1, 10}, {"sleeping/semop", 1, 0}, {"uninterruptible/pread64", 0.5, 0.01}, {"sleeping/wait4", 0, 0}}},
		{"by span and state", query("span,state"), []summary{
			{"/on_cpu", 1, 10}, {"lock_wait/sleeping", 1, 0}, {"/uninterruptible", 0.5, 0.01}, {"/sleeping", 0, 0}}},
		// The formula guard the file has ('-bash) is not what the user types or sees.
		{"where a guarded name", query("process,state", "process=-bash"), []summary{{"-bash/sleeping", 0, 0}}},
		// Two values for one column are alternatives; another column narrows further.
		{"where pid or pid, and state", query("pid", "pid=100", "pid=300", "state=uninterruptible"),
			[]summary{{"300", 0.5, 0.01}}},
		{"by a column the rows leave empty", query("wchan"), []summary{{"", 2.5, 10.01}}},
		{"where a field is empty: in user space", query("process", "syscall="), []summary{{"spin", 1, 10}}},
		// Threads waiting on a disk, by disk and operation.
		{"by io_dev", query("io_dev,io_op", "state=uninterruptible"), []summary{{"nvme0n1/read", 0.5, 0.01}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(dir, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if r.Ticks != 10 {
				t.Errorf("%d ticks, want 10", r.Ticks)
			}
			if got := summarize(r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("groups %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWindowAndTop(t *testing.T) {
	dir := writeTicks(t, start, 10, output.CompressNone)
	q := query("pid")
	q.Window = Window{From: start.Add(3 * time.Second), To: start.Add(6 * time.Second)}
	q.Top = 1
	r, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	// Ticks 3, 4 and 5: the end is not in the window. The D-state thread is at tick 4 only;
	// the shell's three rows are not active sessions.
	if r.Ticks != 3 || r.Rows != 7 || r.Inactive != 3 || r.CPUUs != 3_002_000 {
		t.Errorf("%d ticks, %d rows, %d inactive, %d µs on CPU; want 3, 7, 3, 3002000", r.Ticks, r.Rows, r.Inactive, r.CPUUs)
	}
	want := []summary{{"100", 1, 3}}
	if got := summarize(r); !reflect.DeepEqual(got, want) {
		t.Errorf("top group %v, want %v", got, want)
	}
	if r.Other.Count != 3 || r.Other.Rows != 4 || r.Other.Inactive != 3 {
		t.Errorf("other: %d groups, %d rows, %d inactive; want 3 groups, 4 rows, 3 inactive", r.Other.Count, r.Other.Rows, r.Other.Inactive)
	}
}

func TestTimeline(t *testing.T) {
	dir := writeTicks(t, start.Add(-90*time.Second), 180, output.CompressNone)
	q := Query{Window: Window{From: start.Add(-90 * time.Second), To: start.Add(90 * time.Second)}, Step: StepMinute}
	r, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Timeline) != 4 {
		t.Fatalf("%d buckets, want 4 (13:58:30 is cut, then 13:59, 14:00, 14:01)", len(r.Timeline))
	}
	// The backend asleep in its span stacks as its own kind; the shell asleep outside one
	// is not there: the stack sums to the average active threads, 2.5.
	for _, b := range r.Timeline {
		onCPU, inSpan, d := Average(b.Rows[schema.SessionOnCPU], b.Ticks), Average(b.Rows[schema.SessionSleepingInSpan], b.Ticks),
			Average(b.Rows[schema.SessionUninterruptible], b.Ticks)
		if onCPU != 1 || inSpan != 1 || d != 0.5 || Average(sum(b.Rows[:]), b.Ticks) != 2.5 {
			t.Errorf("%v: %.2f on CPU, %.2f asleep in a span, %.2f in D, %.2f in all; want 1, 1, 0.5, 2.5",
				b.Start, onCPU, inSpan, d, Average(sum(b.Rows[:]), b.Ticks))
		}
	}
	if r.Timeline[1].Ticks != 60 || !r.Timeline[1].Start.Equal(start.Add(-time.Minute)) {
		t.Errorf("second bucket starts %v with %d ticks, want 13:59 with 60", r.Timeline[1].Start, r.Timeline[1].Ticks)
	}
}

// exitingRows is ten ticks of a spinner always on CPU and a worker that runs for the first
// four, then exits: at the fifth it shows once more, dead, with its last interval's 0.3 s
// on CPU.
func exitingRows(tick time.Time, i int) []state.Sample {
	rows := []state.Sample{thread(tick, 100, "spin", state.OnCPU, "", 1_000_000)}
	switch {
	case i < 4:
		rows = append(rows, thread(tick, 400, "cc1", state.OnCPU, "", 1_000_000))
	case i == 4:
		rows = append(rows, thread(tick, 400, "cc1", state.Dead, "", 300_000))
	}
	return rows
}

// TestExitedThreadsAreNotActive: the row of a thread that has exited counts its CPU time,
// but not the thread, in averages, groups and timeline alike.
func TestExitedThreadsAreNotActive(t *testing.T) {
	dir := writeRows(t, start, 10, exitingRows, output.CompressNone)
	r, err := Run(dir, query("state"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 14 || r.Exited != 1 || r.CPUUs != 14_300_000 || Average(r.Rows, r.Ticks) != 1.4 {
		t.Errorf("%d rows, %d exited, %d µs on CPU, %.2f threads on average; want 14, 1, 14300000, 1.40",
			r.Rows, r.Exited, r.CPUUs, Average(r.Rows, r.Ticks))
	}
	want := []summary{{"on_cpu", 1.4, 14}, {"dead", 0, 0.3}}
	if got := summarize(r); !reflect.DeepEqual(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	q := query("state")
	q.Step = StepMinute
	if r, err = Run(dir, q); err != nil {
		t.Fatal(err)
	}
	if len(r.Timeline) != 1 || sum(r.Timeline[0].Rows[:]) != 14 || r.Timeline[0].Rows[0] != 14 || r.Timeline[0].CPUUs != 14_300_000 {
		t.Errorf("timeline %+v, want 14 rows on CPU and 14.3 CPU seconds", r.Timeline)
	}
	var b strings.Builder
	if err := Render(&b, r, FormatTable, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "14 active rows: 1.40 threads on average, 14.30 CPU seconds\n"+
		"and 1 row of threads that had exited: in CPU seconds, not in threads on average") {
		t.Errorf("the summary does not set the exited thread apart:\n%s", b.String())
	}
	if err := Render(&b, r, FormatCSV, 0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "dead") {
		t.Errorf("the timeline shows exited threads as a state:\n%s", b.String())
	}
	b.Reset()
	if err := Render(&b, r, FormatJSON, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"rows": 14,`) || !strings.Contains(b.String(), `"exited_rows": 1,`) {
		t.Errorf("the JSON does not set the exited thread apart:\n%s", b.String())
	}
}

// TestTicksWithoutRows checks that averages are over every tick, also those at which no
// thread had a row, and that an hour without a ticks file (written before threadcap kept
// them) still counts the ticks its rows show.
func TestTicksWithoutRows(t *testing.T) {
	// Rows in the first minute only, at every other tick; the second minute is idle.
	dir := writeRows(t, start, 120, func(tick time.Time, i int) []state.Sample {
		if i%2 == 1 || i >= 60 {
			return nil
		}
		return []state.Sample{thread(tick, 100, "spin", state.OnCPU, "", 1_000_000)}
	}, output.CompressNone)
	q := query("process")
	q.Step = StepMinute
	r, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ticks != 120 || Average(r.Rows, r.Ticks) != 0.25 {
		t.Errorf("%d ticks, %.2f threads on average; want 120 ticks, 0.25", r.Ticks, Average(r.Rows, r.Ticks))
	}
	if len(r.Timeline) != 2 || r.Timeline[1].Ticks != 60 || r.Timeline[1].Rows != [len(timelineStates)]int64{} {
		t.Errorf("timeline %+v, want the idle second minute with 60 ticks and no rows", r.Timeline)
	}

	if err := os.Remove(filepath.Join(dir, "threadcap_ticks_2026-11-21T14Z.csv")); err != nil {
		t.Fatal(err)
	}
	if r, err = Run(dir, q); err != nil {
		t.Fatal(err)
	}
	if r.Ticks != 30 {
		t.Errorf("without the ticks file: %d ticks, want the 30 that had rows", r.Ticks)
	}
}

// TestReadsOnlyTheHoursOfTheWindow reads across closed (compressed) and current hours.
func TestReadsOnlyTheHoursOfTheWindow(t *testing.T) {
	for _, compress := range []string{output.CompressGzip, output.CompressZstd} {
		t.Run(compress, func(t *testing.T) {
			// Ticks every second from 13:59:50 to 15:00:09: three hours, two of them closed.
			suffix := map[string]string{output.CompressGzip: ".csv.gz", output.CompressZstd: ".csv.zst"}[compress]
			dir := writeTicks(t, start.Add(-10*time.Second), 3620, compress,
				"threadcap_samples_2026-11-21T13Z"+suffix, "threadcap_samples_2026-11-21T14Z"+suffix)
			q := query("state")
			q.Window = Window{From: start.Add(-5 * time.Second), To: start.Add(5 * time.Second)}
			r, err := Run(dir, q)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(dir, "threadcap_samples_2026-11-21T13Z"+suffix),
				filepath.Join(dir, "threadcap_samples_2026-11-21T14Z"+suffix)}
			if !reflect.DeepEqual(r.Files, want) {
				t.Errorf("read %v, want %v", r.Files, want)
			}
			if r.Ticks != 10 {
				t.Errorf("%d ticks, want 10", r.Ticks)
			}
			q.Window = Window{From: start.Add(time.Hour), To: start.Add(2 * time.Hour)}
			if r, err = Run(dir, q); err != nil || r.Ticks != 10 || len(r.Files) != 1 {
				t.Errorf("the current hour: %v, %v; want its 10 ticks from one file", r, err)
			}
		})
	}
}

// TestHeaderByName reads a file whose columns are in another order, with one it does not
// know and without one it wants, with a row still being written and a broken one.
func TestHeaderByName(t *testing.T) {
	dir := t.TempDir()
	content := "future_column,state,sample_time,pid\n" +
		"x,on_cpu,2026-11-21T15:00:00.000000+01:00,7\n" +
		"\"y,z\",on_cpu,2026-11-21T15:00:01.000000+01:00,7\n" +
		"x,on_cpu,2026-11-21T15:00:02.000000+01:00\n" + // a field short
		"x,on_cpu,2026-11-21T15:00:03.000000+01:00,7\n" +
		"x,on_cpu,2026-11-21T15:00:04.0000"
	if err := os.WriteFile(filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Run(dir, query("pid,state,user"))
	if err != nil {
		t.Fatal(err)
	}
	want := []summary{{"7/on_cpu/", 1, 0}}
	if got := summarize(r); !reflect.DeepEqual(got, want) || r.Ticks != 3 || r.Malformed != 1 {
		t.Errorf("groups %v over %d ticks, %d malformed; want %v over 3 ticks, 1 malformed", got, r.Ticks, r.Malformed, want)
	}
}

func TestQueryMistakes(t *testing.T) {
	dir := writeTicks(t, start, 2, output.CompressNone)
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{query("proces"), `there is no column "proces"`},
		{query("pid", "stat=on_cpu"), `there is no column "stat"`},
		{query("pid,pid"), "--by names pid twice"},
		{Query{Window: Window{From: start, To: start.Add(time.Hour)}}, "--by names no column"},
		{Query{Window: Window{From: start.Add(2 * time.Hour), To: start.Add(3 * time.Hour)}, By: []string{"pid"}},
			"no hour file in " + dir + " covers"},
	} {
		if _, err := Run(dir, tc.q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) error %v, want one saying %q", tc.q, err, tc.want)
		}
	}
	if _, err := Run(t.TempDir(), query("pid")); err == nil || !strings.Contains(err.Error(), "no threadcap hour files") {
		t.Errorf("an empty dir gives %v, want an error saying there are no hour files", err)
	}
}

// waitFor waits for the writer's background compression to produce path. The limit only
// stops a broken build from hanging.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// TestStreams checks that memory does not grow with rows: ten times the rows over the same
// ticks and groups allocate no more.
func TestStreams(t *testing.T) {
	allocated := func(rowsPerTick int) (bytes, mallocs uint64) {
		dir := t.TempDir()
		log := logrus.New()
		log.SetOutput(io.Discard)
		w, err := output.New(output.Config{Dir: dir, Compress: output.CompressNone, Log: logrus.NewEntry(log),
			Clock: func() time.Time { return start }})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 600 {
			tick := start.Add(time.Duration(i) * 100 * time.Millisecond)
			if err := w.Write(tick, busyTick(tick, rowsPerTick)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		q := query("process,state,syscall")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Run(dir, q)
		runtime.ReadMemStats(&after)
		if err != nil || r.Rows != int64(600*rowsPerTick) || len(r.Groups) != 8 {
			t.Fatalf("%d rows per tick: %v rows in %d groups (%v); want %d in 8", rowsPerTick, r.Rows, len(r.Groups), err, 600*rowsPerTick)
		}
		return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
	}
	smallBytes, smallMallocs := allocated(8)
	bigBytes, bigMallocs := allocated(80)
	if bigBytes > smallBytes+64<<10 || bigMallocs > smallMallocs+100 {
		t.Errorf("48000 rows allocate %d bytes in %d mallocs, 4800 rows %d bytes in %d: memory grows with rows",
			bigBytes, bigMallocs, smallBytes, smallMallocs)
	}
}
