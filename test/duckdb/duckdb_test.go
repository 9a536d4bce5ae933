// SPDX-License-Identifier: Apache-2.0

// Package duckdb_test loads files written by output.Writer into DuckDB the way analysts are
// told to, and checks that every column comes back with its documented type and value.
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

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

func TestMain(m *testing.M) {
	// A half-hour offset catches any reader that parses only whole-hour offsets.
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		panic(err)
	}
	time.Local = loc
	os.Exit(m.Run())
}

// awkward are rows whose text a naive CSV writer or reader gets wrong; want is each text
// column as DuckDB must return it (see the escaping in schema.AppendCSV).
var awkward = []struct {
	s    state.Sample
	want map[string]any
}{
	{sample(func(s *state.Sample) {}), map[string]any{"process": "mysqld", "thread": "connection",
		"exe": "/usr/sbin/mysqld", "syscall_args": "0x7f1234560000 0x80 0x0 0x0 0x0 0xffffffff"}},
	{sample(func(s *state.Sample) {
		s.Process, s.Thread, s.User, s.Exe, s.Wchan = "my,proc", `say "hi"`, "=1+1", "/opt/a\nb/c", "@x"
	}), map[string]any{"process": "my,proc", "thread": `say "hi"`, "user": "'=1+1", "exe": "/opt/a\nb/c", "wchan": "'@x"}},
	{sample(func(s *state.Sample) {
		s.Process, s.Thread, s.User, s.Exe = "'quoted", "bad\xffname", " space ", "/srv/журнал/-x"
		s.Container, s.Unit, s.TCP = "lxc:=x,\"y\x1b", "-a.service", state.TCPInfo{}
	}), map[string]any{"container": "lxc:=x,\"y\u241b", "unit": "'-a.service", "process": "''quoted", "thread": "bad\uFFFDname", "user": " space ", "exe": "/srv/журнал/-x"}},
	{sample(func(s *state.Sample) {
		s.Syscall, s.SyscallUs, s.SyscallCPUUs, s.StateUs, s.CPU = "", state.Unknown, state.Unknown, state.Unknown, state.Unknown
		s.Voluntary, s.Involuntary, s.Seeded, s.Wchan = state.Unknown, state.Unknown, true, "do_epoll_wait"
		s.StateTimeUs = [state.TimedStates]int64{state.Unknown, state.Unknown, state.Unknown, state.Unknown, state.Unknown}
	}), map[string]any{"syscall": nil, "syscall_args": nil, "state_us": nil, "cpu": nil, "on_cpu_us": nil,
		"stopped_us": nil, "voluntary_switches": nil, "seeded": true, "wchan": "do_epoll_wait"}},
	{sample(func(s *state.Sample) { s.Exe = "/" + strings.Repeat("x", 4095) }),
		map[string]any{"exe": "/" + strings.Repeat("x", 4095)}},
}

var hour = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

func sample(change func(*state.Sample)) state.Sample {
	s := state.Sample{
		Time: hour.Add(3*time.Minute + 123456789), Pid: 4242, Tid: 4243, Process: "mysqld",
		Thread: "connection", User: "mysql", State: state.Uninterruptible, StateUs: 1500,
		Syscall: "pread64", SyscallUs: 1500, SyscallCPUUs: 3, CPU: 1,
		Args:        [6]uint64{0x7f1234560000, 0x80, 0, 0, 0, 0xffffffff},
		StateTimeUs: [state.TimedStates]int64{120, 5, 0, 99875, 0},
		Voluntary:   3, Involuntary: 1, Exe: "/usr/sbin/mysqld", Cgroup: "/system.slice/mysql.service",
		FdTarget:    "/var/lib/mysql/ibdata1",
		KernelStack: state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_pread64", "filemap_read"}),
		Container:   "containerd:3f4e5a6b7c8d", PodUID: "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", Unit: "mysql.service",
		TCP: state.TCPInfo{State: "ESTABLISHED", SrttUs: 212345, Retrans: 17, Lost: 3, Cwnd: 10, Unacked: 9,
			RcvQueue: 0, SndQueue: 123456},
	}
	change(&s)
	return s
}

// expected is a row as DuckDB should return it: the sample's numbers and the row's text.
func expected(s state.Sample, texts map[string]any) map[string]any {
	nullable := func(v int64) any {
		if v == state.Unknown {
			return nil
		}
		return v
	}
	row := map[string]any{
		"sample_time": s.Time.Truncate(time.Microsecond).UTC(), "pid": s.Pid, "tid": s.Tid,
		"process": s.Process, "thread": s.Thread, "user": s.User, "state": s.State.String(),
		"state_us": nullable(s.StateUs), "syscall": text(s.Syscall), "syscall_us": nullable(s.SyscallUs),
		"syscall_cpu_us": nullable(s.SyscallCPUUs), "cpu": int32(s.CPU),
		"voluntary_switches": nullable(s.Voluntary), "involuntary_switches": nullable(s.Involuntary),
		"exe": s.Exe, "seeded": s.Seeded, "wchan": text(s.Wchan), "cgroup": text(s.Cgroup),
		"fd_target": text(s.FdTarget), "kernel_stack": nil,
	}
	if s.KernelStack != nil {
		row["kernel_stack"] = s.KernelStack.Hash
	}
	row["container"], row["pod_uid"], row["unit"] = text(s.Container), text(s.PodUID), text(s.Unit)
	row["tcp_state"] = text(s.TCP.State)
	for name, v := range map[string]int64{"tcp_srtt_us": s.TCP.SrttUs, "tcp_retrans": s.TCP.Retrans, "tcp_lost": s.TCP.Lost,
		"tcp_cwnd": s.TCP.Cwnd, "tcp_unacked": s.TCP.Unacked, "tcp_rcv_queue": s.TCP.RcvQueue, "tcp_snd_queue": s.TCP.SndQueue} {
		row[name] = nil
		if s.TCP.State != "" {
			row[name] = v
		}
	}
	for i, name := range []string{"on_cpu_us", "runnable_us", "sleeping_us", "uninterruptible_us", "stopped_us"} {
		row[name] = nullable(s.StateTimeUs[i])
	}
	for k, v := range texts {
		row[k] = v
	}
	return row
}

func TestDuckDBLoadsHourFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return hour }})
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
	// The next hour closes this one, and the Writer compresses it in the background.
	next := hour.Add(time.Hour + time.Minute)
	later := sample(func(s *state.Sample) { s.Time, s.Tid = next, 5000 })
	if err := w.Write(next, []state.Sample{later}); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv.gz")
	waitFor(t, gz)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	// Rejected rows are kept per connection, so every query shares one.
	conn := duckConn(t)

	checkTypes(t, conn, gz)
	got := query(t, conn, gz)
	if len(got) != len(awkward) {
		t.Fatalf("DuckDB read %d rows from %s, want %d", len(got), gz, len(awkward))
	}
	for i, a := range awkward {
		want := expected(a.s, a.want)
		for name, v := range want {
			if !equal(got[i][name], v) {
				t.Errorf("row %d: %s = %#v, want %#v", i, name, got[i][name], v)
			}
		}
	}
	plain := filepath.Join(dir, "threadcap_samples_2026-11-21T15Z.csv")
	if got := query(t, conn, plain); len(got) != 1 || got[0]["tid"] != int32(5000) {
		t.Errorf("current hour reads back as %v, want the one row of tid 5000", got)
	}
	if all := query(t, conn, filepath.Join(dir, "threadcap_samples_*.csv*")); len(all) != len(awkward)+1 {
		t.Errorf("both hours together read back as %d rows, want %d", len(all), len(awkward)+1)
	}
	var rejects int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM reject_errors").Scan(&rejects); err != nil {
		t.Fatal(err)
	}
	if rejects != 0 {
		t.Errorf("DuckDB rejected %d lines", rejects)
	}
}

// text is an empty field as DuckDB reads it: NULL.
func text(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func equal(got, want any) bool {
	if wt, ok := want.(time.Time); ok {
		gt, ok := got.(time.Time)
		return ok && gt.Equal(wt)
	}
	return reflect.DeepEqual(got, want)
}

// readCSV is how analysts are told to load the files: every column named with its type.
func readCSV(path string) string {
	return "read_csv('" + path + "', header = true, delim = ',', quote = '\"', escape = '\"', " +
		"strict_mode = true, store_rejects = true, columns = " + schema.DuckDBColumns() + ")"
}

// checkTypes checks that DuckDB gives every column the type the schema documents.
func checkTypes(t *testing.T, conn *sql.Conn, path string) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "DESCRIBE SELECT * FROM "+readCSV(path))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got, want []string
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
	for _, c := range schema.Columns {
		want = append(want, c.Name+" "+c.Type)
	}
	want[0] = "sample_time TIMESTAMP WITH TIME ZONE" // DuckDB's long name for TIMESTAMPTZ
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DuckDB column types:\n got %v\nwant %v", got, want)
	}
}

// query reads a file as analysts would, in file order, one map per row.
func query(t *testing.T, conn *sql.Conn, path string) []map[string]any {
	t.Helper()
	return run(t, conn, "SELECT * FROM "+readCSV(path))
}

// run executes one statement and returns its rows, one map per row.
func run(t *testing.T, conn *sql.Conn, statement string) []map[string]any {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), statement)
	if err != nil {
		t.Fatalf("%v in\n%s", err, statement)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for rows.Next() {
		values := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, name := range names {
			row[name] = values[i]
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%v in\n%s", err, statement)
	}
	return out
}

// waitFor waits for the Writer's background compression to produce path. It is an event,
// not a deadline being measured: the limit only stops a broken build from hanging.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// duckConn is one connection to an in-memory DuckDB, closed when the test ends.
func duckConn(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
