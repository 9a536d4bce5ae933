// SPDX-License-Identifier: Apache-2.0

package duckdb_test

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/timetravel"
)

var update = flag.Bool("update", false, "rewrite the samples view's columns from the schema, and the README's copy of the recipes")

// The recipes name an example window and directory, which the test replaces with its own.
const (
	exampleDir  = "'data/threadcap_samples_*.csv*'"
	exampleTick = "'data/threadcap_ticks_*.csv*'"
	exampleIO   = "'data/threadcap_io_*.csv*'"
	exampleSpan = "'data/threadcap_spans_*.csv*'"
	exampleFrom = "'2026-11-21 03:10:00'"
	exampleTo   = "'2026-11-21 03:15:00'"
)

// recipe is one file of recipes/, in the README's order (the order of their names).
type recipe struct {
	name, sql string
}

// readsIO tells the recipes of the io files, which a recording of seconds has no minute
// of: TestIORecipe runs them on files of its own.
func (r recipe) readsIO() bool { return strings.Contains(r.sql, exampleIO) }

func recipes(t *testing.T) []recipe { return recipesIn(t, "recipes") }

// recipesIn are the recipes of one folder, in the order of their names.
func recipesIn(t *testing.T, folder string) []recipe {
	t.Helper()
	paths, err := filepath.Glob(folder + "/*.sql")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recipes: %v", err)
	}
	sort.Strings(paths)
	var out []recipe
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recipe{strings.TrimSuffix(filepath.Base(p), ".sql"), string(b)})
	}
	return out
}

// TestREADMEShowsTheRecipes keeps the README's copies, what people paste, equal to the
// files the engine runs below.
func TestREADMEShowsTheRecipes(t *testing.T) {
	for folder, marker := range map[string]string{"recipes": "recipes", "fleet": "fleet-recipes"} {
		readmeShows(t, folder, marker)
	}
}

// readmeShows checks the README's section between <!-- MARKER:begin and <!-- MARKER:end -->
// against the recipes of folder.
func readmeShows(t *testing.T, folder, marker string) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(readme), "<!-- "+marker+":begin")
	comment, rest, ok2 := strings.Cut(rest, "-->\n")
	shown, tail, ok3 := strings.Cut(rest, "<!-- "+marker+":end -->")
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("README.md has no <!-- %s:begin --> ... <!-- %s:end --> section", marker, marker)
	}
	var want strings.Builder
	want.WriteString("```sql\n")
	for i, r := range recipesIn(t, folder) {
		if i > 0 {
			want.WriteString("\n")
		}
		want.WriteString(r.sql)
	}
	want.WriteString("```\n")
	if shown == want.String() {
		return
	}
	if *update {
		fixed := head + "<!-- " + marker + ":begin" + comment + "-->\n" + want.String() + "<!-- " + marker + ":end -->" + tail
		if err := os.WriteFile("../../README.md", []byte(fixed), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's %s differ from test/duckdb/%s; go test -run README -update copies them:\n%s", marker, folder, want.String())
}

// TestSamplesViewHasTheSchema keeps the view's column types equal to the schema's. Run
// with -update, it rewrites them (then run TestREADMEShowsTheRecipes with -update too).
func TestSamplesViewHasTheSchema(t *testing.T) {
	view := recipes(t)[0]
	head, rest, ok1 := strings.Cut(view.sql, "columns = {")
	columns, tail, ok2 := strings.Cut(rest, "}")
	if !ok1 || !ok2 {
		t.Fatalf("recipes/%s.sql has no columns = {...}", view.name)
	}
	compact := func(s string) string { return strings.Join(strings.Fields(s), "") }
	want := strings.TrimSuffix(strings.TrimPrefix(schema.DuckDBColumns(), "{"), "}")
	if compact(columns) == compact(want) {
		return
	}
	if *update {
		fixed := head + "columns = {\n" + wrap(strings.Split(want, ", "), "    ", 92) + "}" + tail
		if err := os.WriteFile(filepath.Join("recipes", view.name+".sql"), []byte(fixed), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("recipes/%s.sql does not list the schema's columns; go test -run 'Schema|README' -update rewrites them", view.name)
}

// TestSpansViewHasTheSchema keeps the spans view's column types equal to the spans
// file's.
func TestSpansViewHasTheSchema(t *testing.T) {
	_, rest, _ := strings.Cut(recipeSQL(t, "8_span_latency"), "columns = {")
	columns, _, ok := strings.Cut(rest, "}")
	compact := func(s string) string { return strings.Join(strings.Fields(s), "") }
	want := strings.TrimSuffix(strings.TrimPrefix(schema.DuckDBSpanColumns(), "{"), "}")
	if !ok || compact(columns) != compact(want) {
		t.Errorf("recipes/8_span_latency.sql's spans view does not list the spans file's columns:\n%s", want)
	}
}

// wrap joins items with ", " into lines of at most width characters, each indented.
func wrap(items []string, indent string, width int) string {
	var b, line strings.Builder
	for i, item := range items {
		if i < len(items)-1 {
			item += ","
		}
		if line.Len() > 0 && line.Len()+1+len(item) > width {
			b.WriteString(line.String() + "\n")
			line.Reset()
		}
		if line.Len() == 0 {
			line.WriteString(indent + item)
		} else {
			line.WriteString(" " + item)
		}
	}
	return b.String() + line.String()
}

// TestRecipesAnswer runs every recipe on files the daemon wrote about a known workload, and
// checks the answers.
func TestRecipesAnswer(t *testing.T) {
	rec := timetravel.Record(t)
	conn := duckConn(t)

	answers := map[string][]map[string]any{}
	window := strings.NewReplacer(
		exampleDir, "'"+filepath.Join(rec.Dir, "threadcap_samples_*.csv*")+"'",
		exampleTick, "'"+filepath.Join(rec.Dir, "threadcap_ticks_*.csv*")+"'",
		exampleSpan, "'"+filepath.Join(rec.Dir, "threadcap_spans_*.csv*")+"'",
		exampleFrom, "'"+rec.From.Format("2006-01-02 15:04:05.999999-07:00")+"'",
		exampleTo, "'"+rec.To.Format("2006-01-02 15:04:05.999999-07:00")+"'")
	for _, r := range recipes(t) {
		if r.readsIO() || r.readsProfile() {
			continue // see TestIORecipe, TestProfileRecipe
		}
		answers[r.name] = run(t, conn, window.Replace(r.sql))
		t.Logf("%s: %v", r.name, answers[r.name])
	}
	ticks := run(t, conn, window.Replace("SELECT count(*) AS n FROM ticks WHERE sample_time >= "+
		exampleFrom+" AND sample_time < "+exampleTo))[0]["n"].(int64)
	seconds := rec.To.Sub(rec.From).Seconds()

	t.Run("top waits", func(t *testing.T) {
		got := answers["2_top_waits"]
		// The sleeper sleeps outside a span: no active session, no wait.
		want := map[string]float64{"uninterruptible vfork": 1}
		for _, row := range got {
			key := str(row["state"]) + " " + str(row["syscall"])
			if row["state"] == "sleeping" {
				t.Errorf("%s: %v threads on average, want none: a thread asleep outside a span is no active session", key, row["avg_threads"])
			}
			if w, ok := want[key]; ok && row["avg_threads"] != w {
				t.Errorf("%s: %v threads on average, want %v", key, row["avg_threads"], w)
			}
			delete(want, key)
			// Two spinners on one CPU: one of them waits at every tick.
			if key == "runnable " && num(row["avg_threads"]) < 0.5 {
				t.Errorf("runnable: %v threads on average, want at least 0.5", row["avg_threads"])
			}
		}
		if len(want) > 0 || len(got) == 0 || num(got[0]["avg_threads"]) < 1 {
			t.Errorf("top waits %v: missing %v", got, want)
		}
	})
	t.Run("D state", func(t *testing.T) {
		got := answers["3_d_state"]
		if len(got) != 1 || got[0]["pid"] != int32(rec.VforkParent) || got[0]["syscall"] != "vfork" ||
			got[0]["process"] != timetravel.VforkName || got[0]["ticks"] != ticks {
			t.Errorf("D-state threads %v, want only the vfork parent %d, in vfork, at all %d ticks", got, rec.VforkParent, ticks)
		}
	})
	t.Run("CPU by minute", func(t *testing.T) {
		var spinnerS float64
		for _, row := range answers["4_cpu_by_minute"] {
			switch row["process"] {
			case timetravel.SpinnerName:
				spinnerS += num(row["cpu_s"])
			case timetravel.HogName:
			default:
				// The sleeper and the vfork parent (NULL: seeded) hardly run.
				if num(row["cpu_s"]) > 0.05 {
					t.Errorf("%v ran %v CPU seconds in the minute from %v, want next to nothing", row["process"], row["cpu_s"], row["minute"])
				}
			}
		}
		// The whole run holds the window, whose CPU time schedstat measured.
		if spinnerS < 0.95*rec.SpinnerCPU.Seconds() {
			t.Errorf("the spinner ran %.3f CPU seconds by the minute, less than the %.3f of the window alone", spinnerS, rec.SpinnerCPU.Seconds())
		}
	})
	t.Run("CPU starvation", func(t *testing.T) {
		got := answers["5_cpu_starvation"]
		if len(got) < 2 || !sameSet([]string{str(got[0]["process"]), str(got[1]["process"])}, timetravel.SpinnerName, timetravel.HogName) {
			t.Fatalf("starvation %v, want the two spinners first", got)
		}
		for _, row := range got[:2] {
			if num(row["runnable_s"]) < 0.2*seconds || num(row["waiting_share"]) < 0.2 {
				t.Errorf("%v waited %v s (share %v) in %v s, want a good part of it", row["process"], row["runnable_s"], row["waiting_share"], seconds)
			}
		}
		for _, row := range got[2:] {
			// NULL for the vfork parent: seeded from /proc, it has no accounted times.
			if num(row["runnable_s"]) > 0.1 {
				t.Errorf("%v waited %v s for a CPU, want next to nothing", row["process"], row["runnable_s"])
			}
		}
	})
	t.Run("span latency", func(t *testing.T) {
		// Per minute, so the window's minutes hold spanwork's calls only if it ran in
		// them: asked again over the whole recording.
		all := strings.NewReplacer(exampleSpan, "'"+filepath.Join(rec.Dir, "threadcap_spans_*.csv*")+"'",
			exampleFrom, "'"+rec.From.Add(-time.Hour).Format("2006-01-02 15:04:05-07:00")+"'",
			exampleTo, "'"+rec.To.Add(time.Hour).Format("2006-01-02 15:04:05-07:00")+"'")
		got := map[string]map[string]any{}
		for _, row := range run(t, conn, all.Replace(recipeSQL(t, "8_span_latency"))) {
			got[str(row["span"])] = row
		}
		for _, span := range []string{"call", "work"} {
			row := got[span]
			if row == nil || row["spans"] != int64(rec.SpanCalls) {
				t.Errorf("span %s: %v, want %d spans", span, row, rec.SpanCalls)
				continue
			}
			// 5 ms on CPU: bucket [4, 8) ms; 15 ms or more in all: p50 at 16 ms or above.
			if num(row["cpu_p50_ms"]) != 8.192 || num(row["wall_p50_ms"]) < 16.384 {
				t.Errorf("span %s: p50 %v ms on CPU and %v ms wall, want 8.192 and at least 16.384", span, row["cpu_p50_ms"], row["wall_p50_ms"])
			}
			// The spinners beside it make it wait for a CPU too: whatever the split, the
			// shares add up to the wall time, and 5 ms of each call is on CPU.
			shares := num(row["on_cpu_share"]) + num(row["runnable_share"]) + num(row["sleeping_share"]) + num(row["uninterruptible_share"])
			onCPUMs := num(row["on_cpu_share"]) * num(row["avg_wall_ms"])
			if shares < 0.98 || shares > 1.02 || onCPUMs < 4.5 || onCPUMs > 7 {
				t.Errorf("span %s: shares %v add up to %v, %.2f ms on CPU per call; want 1 and about 5 ms", span, row, shares, onCPUMs)
			}
		}
	})
	t.Run("long syscalls", func(t *testing.T) {
		got := answers["6_long_syscalls"]
		for _, row := range got {
			if row["pid"] == int32(rec.Sleeper) {
				// Asleep since before the window began, so longer than the window at its end.
				if num(row["longest_s"]) < seconds || row["syscall"] != sleepSyscall(got) {
					t.Errorf("sleeper: %v, want in %s for more than %v s", row, sleepSyscall(got), seconds)
				}
				return
			}
		}
		t.Errorf("long syscalls %v, want the sleeper", got)
	})
}

// TestRecipesOnExitedThreads runs the recipes on files holding the dead row a thread leaves
// when it exits: its last CPU time counts, but it is not a thread waiting.
func TestRecipesOnExitedThreads(t *testing.T) {
	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 3, 10, 0, 0, time.Local)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return first }})
	if err != nil {
		t.Fatal(err)
	}
	// Ten ticks: a spinner always on CPU; a worker asleep in futex inside a lock_wait span
	// for four, then, after running 0.3 s more, exited: one dead row at the fifth; and a
	// shell always asleep in wait4, outside any span.
	row := func(tick time.Time, pid int32, process string, st state.State, syscall string, onCPUUs int64) state.Sample {
		s := state.Sample{Time: tick, Pid: pid, Tid: pid, Process: process, Thread: process, User: "root", State: st,
			StateUs: state.Unknown, Syscall: syscall, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown,
			Voluntary: 0, Involuntary: 0}
		s.StateTimeUs[state.OnCPU] = onCPUUs
		return s
	}
	for i := range 10 {
		tick := first.Add(time.Duration(i) * time.Second)
		rows := []state.Sample{row(tick, 100, "spin", state.OnCPU, "", 1_000_000), row(tick, 300, "bash", state.Sleeping, "wait4", 0)}
		switch {
		case i < 4:
			worker := row(tick, 200, "worker", state.Sleeping, "futex", 0)
			worker.Span, worker.SpanUs = "lock_wait", 1000
			rows = append(rows, worker)
		case i == 4:
			rows = append(rows, row(tick, 200, "worker", state.Dead, "", 300_000))
		}
		if err := w.Write(tick, rows); err != nil {
			t.Fatal(err)
		}
	}
	// Two spans of 30 µs in the first minute, 10 µs of it on CPU: 8 and 22 µs wall,
	// 2 and 8 µs on CPU.
	spans := state.SpanMinute{Minute: first, Span: "query", Count: 2, WallUs: 30, PartUs: [4]int64{10, 0, 20, 0}}
	spans.WallHist[4], spans.WallHist[5] = 1, 1
	spans.CPUHist[2], spans.CPUHist[4] = 1, 1
	if err := w.WriteSpans(first, []state.SpanMinute{spans}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	conn := duckConn(t)
	window := strings.NewReplacer(
		exampleDir, "'"+filepath.Join(dir, "threadcap_samples_*.csv*")+"'",
		exampleTick, "'"+filepath.Join(dir, "threadcap_ticks_*.csv*")+"'",
		exampleSpan, "'"+filepath.Join(dir, "threadcap_spans_*.csv*")+"'",
		exampleFrom, "'"+first.Format("2006-01-02 15:04:05-07:00")+"'",
		exampleTo, "'"+first.Add(time.Minute).Format("2006-01-02 15:04:05-07:00")+"'")
	answers := map[string][]map[string]any{}
	for _, r := range recipes(t) {
		if !r.readsIO() && !r.readsProfile() {
			answers[r.name] = run(t, conn, window.Replace(r.sql))
		}
	}
	if got := answers["2_top_waits"]; len(got) != 1 || got[0]["state"] != "sleeping" || got[0]["span"] != "lock_wait" ||
		got[0]["syscall"] != "futex" || num(got[0]["avg_threads"]) != 0.4 {
		t.Errorf("top waits %v, want only sleeping in lock_wait in futex, 0.4 threads: the exited thread and the shell "+
			"asleep outside a span are no active sessions", got)
	}
	cpu := map[string]float64{}
	for _, r := range answers["4_cpu_by_minute"] {
		cpu[str(r["process"])] += num(r["cpu_s"])
	}
	if cpu["spin"] != 10 || cpu["worker"] != 0.3 {
		t.Errorf("CPU seconds %v, want spin 10 and worker 0.3, its last stretch before it exited", cpu)
	}
	if got := answers["5_cpu_starvation"]; len(got) != 3 {
		t.Errorf("starvation %v, want the three processes, the exited one with its CPU seconds", got)
	}
	// p50 is the first bucket holding half the spans: [8, 16) µs, 0.016 ms; p99 the next.
	if got := answers["8_span_latency"]; len(got) != 1 || got[0]["spans"] != int64(2) || num(got[0]["wall_p50_ms"]) != 0.016 ||
		num(got[0]["wall_p99_ms"]) != 0.032 || num(got[0]["cpu_p50_ms"]) != 0.004 || num(got[0]["on_cpu_share"]) != 0.33 {
		t.Errorf("span latency %v, want 2 query spans, wall p50 0.016 ms and p99 0.032, on-CPU p50 0.004, a third on CPU", got)
	}
}

// recipeSQL is the text of recipe name.
func recipeSQL(t *testing.T, name string) string {
	t.Helper()
	for _, r := range recipes(t) {
		if r.name == name {
			return r.sql
		}
	}
	t.Fatalf("no recipe %s", name)
	return ""
}

// sleepSyscall is the syscall sleep(1) sleeps in: clock_nanosleep with glibc, nanosleep
// with other C libraries.
func sleepSyscall(rows []map[string]any) string {
	for _, row := range rows {
		if row["syscall"] == "nanosleep" {
			return "nanosleep"
		}
	}
	return "clock_nanosleep"
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// num is a DOUBLE of an answer; NULL reads as 0.
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func sameSet(got []string, want ...string) bool {
	sort.Strings(got)
	sort.Strings(want)
	return strings.Join(got, ",") == strings.Join(want, ",")
}
