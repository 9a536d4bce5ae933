// SPDX-License-Identifier: Apache-2.0

package duckdb_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// The fleet recipes name the example tree, which the test replaces with its own.
const (
	exampleFleetSamples = "'parquet/kind=samples/*/*/*.parquet'"
	exampleFleetTicks   = "'parquet/kind=ticks/*/*/*.parquet'"
)

// TestParquetHourInDuckDB reads the Parquet file of an hour of awkward rows, written with
// its CSV (format both): the documented types, the CSV's rows, and the text as threads
// named themselves, without the CSV's guard against spreadsheet formulas.
func TestParquetHourInDuckDB(t *testing.T) {
	dir := t.TempDir()
	w, err := output.New(output.Config{Dir: dir, Format: output.FormatBoth, Host: "db-1", Clock: func() time.Time { return hour }})
	if err != nil {
		t.Fatal(err)
	}
	var rows []state.Sample
	for _, a := range awkward {
		rows = append(rows, a.s)
	}
	if err := w.Write(hour.Add(3*time.Minute), rows); err != nil {
		t.Fatal(err)
	}
	// The next hour closes this one: the Writer writes it as Parquet, then compresses it.
	next := hour.Add(time.Hour + time.Minute)
	if err := w.Write(next, []state.Sample{sample(func(s *state.Sample) { s.Time = next })}); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.Gzip))
	waitFor(t, gz)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, hourfile.Samples.ParquetPath(hour, "db-1"))
	conn := duckConn(t)

	readPq := "read_parquet('" + pq + "', hive_partitioning = false)"
	want := []string{"host VARCHAR"}
	for _, c := range schema.Columns {
		want = append(want, c.Name+" "+strings.Replace(c.Type, "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", 1))
	}
	if got := describe(t, conn, "SELECT * FROM "+readPq); !reflect.DeepEqual(got, want) {
		t.Errorf("DuckDB's types of the Parquet file:\n got %v\nwant %v", got, want)
	}
	fromCSV := query(t, conn, gz)
	fromPq := run(t, conn, "SELECT * FROM "+readPq)
	if len(fromPq) != len(fromCSV) || len(fromPq) != len(awkward) {
		t.Fatalf("%d rows in Parquet, %d in the CSV, want %d", len(fromPq), len(fromCSV), len(awkward))
	}
	for i := range fromPq {
		if fromPq[i]["host"] != "db-1" {
			t.Errorf("row %d: host %v", i, fromPq[i]["host"])
		}
		for _, c := range schema.Columns {
			want := fromCSV[i][c.Name]
			if s, ok := want.(string); ok {
				want = string(hourfile.Unguard([]byte(s)))
			}
			if !equal(fromPq[i][c.Name], want) {
				t.Errorf("row %d: %s = %#v in Parquet, %#v in the CSV", i, c.Name, fromPq[i][c.Name], fromCSV[i][c.Name])
			}
		}
	}
	// The guard goes: a user named =1+1 is =1+1 again; a process named 'quoted is 'quoted.
	if fromPq[1]["user"] != awkward[1].s.User || fromPq[2]["process"] != awkward[2].s.Process {
		t.Errorf("hostile names came back as %q and %q", fromPq[1]["user"], fromPq[2]["process"])
	}
}

// describe lists a query's columns as "name TYPE".
func describe(t *testing.T, conn *sql.Conn, query string) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "DESCRIBE "+query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rows.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		got = append(got, name+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// fleetHost is one host's known workload: at every tick, threads on CPU, asleep inside a
// span (active sessions), asleep outside one (idle: none), and in D state (at every tick,
// or every other one).
type fleetHost struct {
	name                          string
	onCPU, sleeping, idle, dState int
	dEveryOther                   bool
	wantDSeconds, wantDAvg        float64
	wantOnCPUAvg, wantSleeps      float64
}

// TestFleetRecipes runs the fleet recipes on a tree holding three hosts' Parquet hours, as
// a bucket does after each host shipped its own: twenty minutes across an hour's end, of
// which the window takes the ten in the middle.
func TestFleetRecipes(t *testing.T) {
	first := time.Date(2026, 11, 21, 13, 50, 0, 0, time.UTC)
	hosts := []fleetHost{
		{name: "db-1", onCPU: 2, dState: 1, wantDSeconds: 600, wantDAvg: 1, wantOnCPUAvg: 2},
		{name: "db-2", onCPU: 1, dState: 1, dEveryOther: true, wantDSeconds: 300, wantDAvg: 0.5, wantOnCPUAvg: 1},
		{name: "web-1", sleeping: 1, idle: 3, wantSleeps: 1},
	}
	bucket := t.TempDir()
	for _, h := range hosts {
		dir := t.TempDir()
		recordFleetHost(t, dir, h, first)
		if err := os.CopyFS(bucket, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	conn := duckConn(t)
	from, to := first.Add(5*time.Minute), first.Add(15*time.Minute)
	window := strings.NewReplacer(
		exampleFleetSamples, "'"+filepath.Join(bucket, "parquet/kind=samples/*/*/*.parquet")+"'",
		exampleFleetTicks, "'"+filepath.Join(bucket, "parquet/kind=ticks/*/*/*.parquet")+"'",
		exampleFrom, "'"+from.Local().Format("2006-01-02 15:04:05-07:00")+"'",
		exampleTo, "'"+to.Local().Format("2006-01-02 15:04:05-07:00")+"'")
	answers := map[string][]map[string]any{}
	for _, r := range recipesIn(t, "fleet") {
		answers[r.name] = run(t, conn, window.Replace(r.sql))
		t.Logf("%s: %v", r.name, answers[r.name])
	}

	avg := map[string]float64{}
	for _, row := range answers["2_active_by_host"] {
		avg[str(row["host"])+" "+str(row["state"])] = num(row["avg_threads"])
	}
	want := map[string]float64{}
	for _, h := range hosts {
		for st, v := range map[string]float64{"on_cpu": h.wantOnCPUAvg, "uninterruptible": h.wantDAvg, "sleeping": h.wantSleeps} {
			if v > 0 {
				want[h.name+" "+st] = v
			}
		}
	}
	if !reflect.DeepEqual(avg, want) {
		t.Errorf("average active threads by host and state:\n got %v\nwant %v", avg, want)
	}

	got := answers["3_d_state_hosts"]
	if len(got) != 2 || got[0]["host"] != "db-1" || got[1]["host"] != "db-2" {
		t.Fatalf("D-state hosts %v, want db-1 then db-2, and not web-1", got)
	}
	for i, h := range hosts[:2] {
		if num(got[i]["d_state_s"]) != h.wantDSeconds || got[i]["d_threads"] != int64(1) || got[i]["wchan"] != "blk_mq_get_tag" {
			t.Errorf("%s: %v, want %v s of D state, in one thread, in blk_mq_get_tag", h.name, got[i], h.wantDSeconds)
		}
	}
	var files int64
	if err := conn.QueryRowContext(context.Background(), "SELECT count(DISTINCT filename) FROM read_parquet('"+
		filepath.Join(bucket, "parquet/kind=samples/*/*/*.parquet")+"', filename = true)").Scan(&files); err != nil {
		t.Fatal(err)
	}
	if files != 6 {
		t.Errorf("%d samples files in the tree, want 3 hosts × 2 hours", files)
	}
}

// recordFleetHost writes h's workload at 1 Hz for twenty minutes from first, as Parquet,
// and closes the last hour.
func recordFleetHost(t *testing.T, dir string, h fleetHost, first time.Time) {
	t.Helper()
	now := first
	w, err := output.New(output.Config{Dir: dir, Format: output.FormatParquet, Host: h.name, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	row := func(tick time.Time, tid int32, st state.State, syscall, wchan string) state.Sample {
		s := state.Sample{Time: tick, Pid: 100, Tid: tid, Process: "worker", Thread: "worker", User: "app", State: st,
			StateUs: 1_000_000, Syscall: syscall, SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown, Wchan: wchan}
		s.StateTimeUs[st] = 1_000_000
		return s
	}
	for i := range 20 * 60 {
		tick := first.Add(time.Duration(i) * time.Second)
		var rows []state.Sample
		for j := range h.onCPU {
			rows = append(rows, row(tick, int32(200+j), state.OnCPU, "", ""))
		}
		for j := range h.sleeping {
			r := row(tick, int32(300+j), state.Sleeping, "futex", "futex_wait")
			r.Span = "client_wait"
			rows = append(rows, r)
		}
		for j := range h.idle {
			rows = append(rows, row(tick, int32(500+j), state.Sleeping, "epoll_wait", "do_epoll_wait"))
		}
		if !h.dEveryOther || i%2 == 0 {
			for j := range h.dState {
				rows = append(rows, row(tick, int32(400+j), state.Uninterruptible, "fsync", "blk_mq_get_tag"))
			}
		}
		now = tick
		if err := w.Write(tick, rows); err != nil {
			t.Fatal(err)
		}
	}
	// The next hour closes the last: the Writer writes it as Parquet in the background.
	now = first.Truncate(time.Hour).Add(2 * time.Hour)
	if err := w.Write(now, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, filepath.Join(dir, hourfile.Ticks.ParquetPath(now.Add(-time.Hour), h.name)))
	waitFor(t, filepath.Join(dir, hourfile.Samples.ParquetPath(now.Add(-time.Hour), h.name)))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The current hour's CSV stays with the host; only Parquet hours go to the bucket.
	for _, f := range mustList(t, dir) {
		if f.Suffix != hourfile.Parquet {
			os.Remove(f.Path)
		}
	}
}

func mustList(t *testing.T, dir string) []hourfile.File {
	t.Helper()
	files, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
