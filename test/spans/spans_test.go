// SPDX-License-Identifier: Apache-2.0

// Package spans runs the daemon with spans over a real PostgreSQL (the postgresql presets)
// and a program with its own USDT probes and a function to probe, and checks the rows and
// the spans file it wrote.
package spans

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/pgtest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// Queries the test runs, each by one psql -c: one query span each.
const (
	sleepQuery = "SELECT pg_sleep(0.6)"
	cpuQuery   = "SELECT count(*) FROM generate_series(1, 4000000) a, generate_series(1, 1) b"
	quickQuery = "SELECT 1"
	quickRuns  = 20
	pgbenchTx  = 200 // transactions per pgbench client, of 2
	calls      = 30  // spanwork's calls
)

// rig is what the tests of this package share: a private PostgreSQL (its own copy of the
// server binary, so that no other cluster's queries count) initialized for pgbench, the
// spanwork program, the threadcap binary, and where its data and config go.
type rig struct {
	pg               *pgtest.Server
	pgBin, work, bin string
	dir, cfg         string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	privileged.Require(t)
	tmp := t.TempDir()
	r := &rig{pgBin: pgtest.Private(t), dir: filepath.Join(tmp, "data"), cfg: filepath.Join(tmp, "threadcap.yaml")}
	r.pg = pgtest.StartIn(t, r.pgBin)
	if out, err := r.pg.Pgbench("-i", "-q", "-s", "1").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	r.work = workload.SpanWork(t)
	var err error
	if r.bin, err = daemontest.Build(tmp); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSpans(t *testing.T) {
	r := newRig(t)
	pg, pgBin, work, bin, dir, cfg := r.pg, r.pgBin, r.work, r.bin, r.dir, r.cfg
	writeConfig(t, cfg, dir, filepath.Join(pgBin, "postgres"), work)

	daemon := daemontest.Start(t, bin, time.Minute, "--config", cfg, "--hz", "10", "--all", "--log-level", "warn")

	psql := func(sql string) {
		if out, err := pg.Psql(sql).CombinedOutput(); err != nil {
			t.Fatalf("psql -c %q: %v\n%s", sql, err, out)
		}
	}
	psql(sleepQuery)
	// TPC-B: seven statements a transaction, each a query span, besides pgbench's own
	// few (it asks the scale, and so on).
	if out, err := pg.Pgbench("-n", "-c", "2", "-t", strconv.Itoa(pgbenchTx)).CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	psql(cpuQuery)
	for range quickRuns {
		psql(quickQuery)
	}
	if out, err := exec.Command(work, strconv.Itoa(calls), "5", "10").CombinedOutput(); err != nil {
		t.Fatalf("spanwork: %v\n%s", err, out)
	}
	daemon.Stop(t)

	queries := checkSpansFile(t, dir)
	checkRows(t, dir)
	checkLatencyReport(t, bin, dir, queries)
}

// checkLatencyReport: threadcap report --latency over the run has every span, with the
// counts of the spans file and spanwork's 5 ms on CPU in the 4-8 ms bucket.
func checkLatencyReport(t *testing.T, bin, dir string, queries int64) {
	t.Helper()
	out, err := exec.Command(bin, "report", "--config", "", "--dir", dir, "--last", "1h", "--latency", "--format", "csv").Output()
	if err != nil {
		t.Fatalf("threadcap report --latency: %v", err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("threadcap report --latency:\n%s", out)
	got := map[string][]string{}
	for _, r := range rows[1:] {
		got[r[0]] = r
	}
	if r := got["query"]; r == nil || r[1] != strconv.Itoa(int(queries)) {
		t.Errorf("latency view's query row %v, want the spans file's %d spans", r, queries)
	}
	if r := got["work"]; r == nil || r[1] != strconv.Itoa(calls) || r[6] != "8.192" {
		t.Errorf("latency view's work row %v, want %d spans, on-CPU p50 8.192 ms", r, calls)
	}
}

func writeConfig(t *testing.T, path, dir, postgres, work string) {
	t.Helper()
	yaml := fmt.Sprintf("dir: %s\n%s  - preset: postgresql\n    binary: %s\n  - preset: postgresql_buffers\n    binary: %s\n",
		dir, workload.SpanWorkSpans(work), postgres, postgres)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// checkSpansFile: each span's count is what ran (the queries, spanwork's calls); every
// row's parts add up to its wall time exactly, and its histograms hold its count.
func checkSpansFile(t *testing.T, dir string) (queries int64) {
	t.Helper()
	rows := daemontest.ReadTable(t, dir, hourfile.Spans)
	if len(rows) == 0 || len(rows[0]) != len(schema.SpanColumns) {
		t.Fatalf("spans file rows %v, want rows of %d columns", rows, len(schema.SpanColumns))
	}
	count := map[string]int64{}
	parts := map[string][4]int64{}
	for _, r := range rows {
		n := atoi(t, r["count"])
		count[r["span"]] += n
		var sum int64
		p := parts[r["span"]]
		for i, c := range []string{"on_cpu_us", "runnable_us", "sleeping_us", "uninterruptible_us"} {
			sum += atoi(t, r[c])
			p[i] += atoi(t, r[c])
		}
		parts[r["span"]] = p
		if wall := atoi(t, r["wall_us"]); sum != wall {
			t.Errorf("spans row %v: parts add up to %d µs, wall_us is %d", r, sum, wall)
		}
		for _, h := range []string{"wall_hist", "on_cpu_hist"} {
			var in int64
			for _, f := range strings.Fields(r[h]) {
				in += atoi(t, f)
			}
			if in != n {
				t.Errorf("spans row %v: %s holds %d spans, count is %d", r, h, in, n)
			}
		}
	}
	// psql's are exact; pgbench's 7 a transaction within 1% (it runs a few of its own).
	if want := int64(2 + quickRuns + 2*pgbenchTx*7); count["query"] < want || float64(count["query"]) > 1.01*float64(want) {
		t.Errorf("%d query spans, want %d (within 1%%): one per statement run", count["query"], want)
	}
	if count["buffer_read"] == 0 {
		t.Errorf("%d buffer_read spans, want some: every query reads buffers", count["buffer_read"])
	}
	if count["call"] != calls || count["work"] != calls {
		t.Errorf("%d call and %d work spans, want %d of each", count["call"], count["work"], calls)
	}
	// spanwork: 5 ms on CPU and 10 ms asleep per call.
	if cpu := float64(parts["work"][0]) / calls / 1000; cpu < 4.75 || cpu > 6.5 {
		t.Errorf("work spans: %.2f ms on CPU per call, want about 5", cpu)
	}
	if asleep := float64(parts["work"][2]) / calls / 1000; asleep < 10 {
		t.Errorf("work spans: %.2f ms asleep per call, want at least 10", asleep)
	}
	// The queries: pg_sleep's 600 ms mostly asleep, the count mostly on CPU.
	if p := parts["query"]; p[2] < 600_000 || p[0] < 100_000 {
		t.Errorf("query spans: %d µs asleep and %d µs on CPU, want at least 600 ms asleep and 100 ms on CPU", p[2], p[0])
	}
	return count["query"]
}

// checkRows: rows of the backend running a query show span query, the query text and the
// backend's command line; the sleeping query's rows are asleep, the counting one's on CPU.
func checkRows(t *testing.T, dir string) {
	t.Helper()
	var sleepRows, sleepAsleep, cpuRows, cpuBusy int
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Samples) {
		if r["span"] != "query" {
			continue
		}
		if !strings.HasPrefix(r["cmdline"], "postgres: postgres postgres 127.0.0.1") {
			t.Errorf("a row in a query has cmdline %q, want the backend's", r["cmdline"])
		}
		if atoi(t, r["span_us"]) < 0 {
			t.Errorf("span_us %s", r["span_us"])
		}
		switch r["span_arg"] {
		case sleepQuery:
			sleepRows++
			if r["state"] == "sleeping" {
				sleepAsleep++
			}
		case cpuQuery:
			cpuRows++
			if r["state"] == "on_cpu" || r["state"] == "runnable" {
				cpuBusy++
			}
		}
	}
	// 10 Hz over 600 ms: about six rows in pg_sleep, all but the first asleep.
	if sleepRows < 3 || sleepAsleep < sleepRows-1 {
		t.Errorf("%d rows in %q, %d of them sleeping; want at least 3, all but one sleeping", sleepRows, sleepQuery, sleepAsleep)
	}
	if cpuRows < 1 || cpuBusy < cpuRows-1 {
		t.Errorf("%d rows in %q, %d of them on CPU or runnable; want at least 1, all but one", cpuRows, cpuQuery, cpuBusy)
	}
}
