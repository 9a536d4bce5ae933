// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/internal/rowtest"
	"github.com/threadcap/threadcap/state"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// column is the index of a column by name.
func column(t testing.TB, name string) int {
	t.Helper()
	for i, c := range Columns {
		if c.Name == name {
			return i
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

// unguard reverses the formula guard, as the schema tells readers to.
func unguard(v string) string {
	return strings.TrimPrefix(v, "'")
}

func TestMain(m *testing.M) { rowtest.Main(m) }

// tick and mysqlRow are rowtest's.
var (
	tick     = rowtest.Tick
	mysqlRow = rowtest.MysqlRow
)

func TestAppendCSVText(t *testing.T) {
	tests := []struct {
		name, value string
		raw         string // what a DBA sees in the file
		parsed      string // what a CSV reader returns
	}{
		{"plain name greps as is", "mysqld", "mysqld", "mysqld"},
		{"comma is quoted", "a,b", `"a,b"`, "a,b"},
		{"quote is doubled", `say "hi"`, `"say ""hi"""`, `say "hi"`},
		{"newline is quoted", "a\nb", "\"a\nb\"", "a\nb"},
		{"leading space is quoted", " x", `" x"`, " x"},
		{"trailing space is quoted", "x ", `"x "`, "x "},
		{"inner space is not quoted", "kworker/0:1 H", "kworker/0:1 H", "kworker/0:1 H"},
		{"formula is guarded", "=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"},
		{"plus is guarded", "+1", "'+1", "'+1"},
		{"minus is guarded", "-bash", "'-bash", "'-bash"},
		{"at is guarded", "@SUM(1)", "'@SUM(1)", "'@SUM(1)"},
		{"tab is guarded", "\tx", "'\tx", "'\tx"},
		{"CR is shown, not obeyed", "\rx", "\u240dx", "\u240dx"},
		{"ESC is shown, not obeyed", "a\x1b[2Jb", "a\u241b[2Jb", "a\u241b[2Jb"},
		{"DEL is shown", "a\x7fb", "a\u2421b", "a\u2421b"},
		{"C1 control is replaced", "a\u009b2Jb", "a\uFFFD2Jb", "a\uFFFD2Jb"},
		{"guard is guarded", "'x", "''x", "''x"},
		{"formula with comma is guarded inside quotes", "=1,2", `"'=1,2"`, "'=1,2"},
		{"invalid UTF-8 is replaced", "a\xffb", "a\uFFFDb", "a\uFFFDb"},
		{"NUL is shown", "a\x00b", "a\u2400b", "a\u2400b"},
		{"valid UTF-8 is kept", "журнал", "журнал", "журнал"},
	}
	i := column(t, "thread")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mysqlRow(tick, 1)
			s.Thread = tt.value
			line := string(AppendCSV(nil, &s))
			if want := ",mysqld," + tt.raw + ",mysql,"; !strings.Contains(line, want) {
				t.Errorf("row %q does not contain %q", line, want)
			}
			rec, err := csv.NewReader(strings.NewReader(line)).Read()
			if err != nil {
				t.Fatalf("row %q does not parse: %v", line, err)
			}
			if rec[i] != tt.parsed {
				t.Errorf("thread reads back as %q, want %q", rec[i], tt.parsed)
			}
		})
	}
}

func TestAppendCSVFields(t *testing.T) {
	full := mysqlRow(tick, 7)
	seeded := state.Sample{
		Time: tick, Pid: 1, Tid: 1, Process: "systemd", Thread: "systemd", User: "root",
		State: state.Sleeping, StateUs: state.Unknown, SyscallUs: state.Unknown,
		SyscallCPUUs: state.Unknown, Args: [6]uint64{1, 2, 3, 4, 5, 6}, CPU: state.Unknown,
		StateTimeUs: [state.TimedStates]int64{state.Unknown, state.Unknown, state.Unknown, state.Unknown, state.Unknown},
		Voluntary:   state.Unknown, Involuntary: state.Unknown, Exe: "/usr/lib/systemd/systemd",
		Seeded: true, Wchan: "ep_poll",
	}
	tests := []struct {
		name string
		s    state.Sample
		want map[string]string
	}{
		{"observed thread in a syscall", full, map[string]string{
			"sample_time": "2026-11-21T08:03:07.123456-05:00", "pid": "4242", "tid": "7",
			"state": "sleeping", "state_us": "1500", "syscall": "futex", "syscall_cpu_us": "3",
			"syscall_args": "0x7f1234560000 0x80 0x0 0x0 0x0 0xffffffff", "cpu": "1",
			"on_cpu_us": "120", "runnable_us": "5", "sleeping_us": "99875",
			"uninterruptible_us": "0", "stopped_us": "0", "voluntary_switches": "3",
			"involuntary_switches": "1", "seeded": "false", "wchan": "",
			"cgroup": "/system.slice/mysql.service",
		}},
		{"seeded thread: unknowns are empty, args hidden without a syscall", seeded, map[string]string{
			"state_us": "", "syscall": "", "syscall_us": "", "syscall_cpu_us": "",
			"syscall_args": "", "cpu": "", "on_cpu_us": "", "stopped_us": "",
			"voluntary_switches": "", "involuntary_switches": "", "seeded": "true", "wchan": "ep_poll",
			"cgroup": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := AppendCSV(nil, &tt.s)
			rec, err := csv.NewReader(bytes.NewReader(line)).Read()
			if err != nil {
				t.Fatalf("row %q does not parse: %v", line, err)
			}
			if len(rec) != len(Columns) {
				t.Fatalf("row has %d fields, schema has %d columns", len(rec), len(Columns))
			}
			for name, want := range tt.want {
				if got := rec[column(t, name)]; got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestAppendCSVDoesNotAllocate(t *testing.T) {
	s := mysqlRow(tick, 1)
	s.Exe = "/opt/app, \"v2\"/bin\xff" // the slow path too
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendCSV(buf[:0], &s) }); n != 0 {
		t.Errorf("AppendCSV allocates %v times per row, want 0", n)
	}
}

// visible is what the escaping of control characters and invalid UTF-8 makes of v.
func visible(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return r
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		case r >= 0x80 && r < 0xa0:
			return utf8.RuneError
		}
		return r
	}, v)
}

// FuzzAppendCSV checks that any text reads back with a standard CSV reader as the value
// that went in, modulo the documented escaping, never as a spreadsheet formula, and that no
// control character but tab and newline reaches the file.
func FuzzAppendCSV(f *testing.F) {
	f.Add("mysqld", "conn,1", `say "hi"`, "a\nb\r\nc", "=cmd|' /C calc'!A0", "\xff\xfe", int64(5), int32(-1))
	f.Add(" lead", "trail ", "'", "@x", "+1", "-", int64(-1), int32(3))
	f.Add(strings.Repeat("x,\"", 1366), "\t", "\r", "\x00", "", "журнал", int64(1<<62), int32(0))
	f.Fuzz(func(t *testing.T, process, thread, user, syscall, exe, wchan string, us int64, cpu int32) {
		s := mysqlRow(tick, 1)
		s.Process, s.Thread, s.User, s.Syscall, s.Exe, s.Wchan = process, thread, user, syscall, exe, wchan
		s.StateUs, s.CPU = us, cpu
		line := AppendCSV(nil, &s)
		for _, c := range line[:len(line)-1] {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				t.Fatalf("row %q holds control character %#x", line, c)
			}
		}
		if bytes.Contains(line, []byte("\u009b")) {
			t.Fatalf("row %q holds the C1 control CSI", line)
		}
		r := csv.NewReader(bytes.NewReader(line))
		r.FieldsPerRecord = len(Columns)
		rec, err := r.Read()
		if err != nil {
			t.Fatalf("row %q does not parse: %v", line, err)
		}
		if _, err := r.Read(); err == nil {
			t.Fatalf("row %q reads as more than one record", line)
		}
		for name, in := range map[string]string{"process": process, "thread": thread, "user": user,
			"syscall": syscall, "exe": exe, "wchan": wchan} {
			got := rec[column(t, name)]
			if got != "" && got[0] != '\'' && hourfile.NeedsGuard(got[0]) {
				t.Errorf("%s %q would run as a formula", name, got)
			}
			if want := visible(in); unguard(got) != want {
				t.Errorf("%s %q reads back as %q", name, in, got)
			}
		}
		wantUs := strconv.FormatInt(us, 10)
		if us == state.Unknown {
			wantUs = ""
		}
		if got := rec[column(t, "state_us")]; got != wantUs {
			t.Errorf("state_us %d reads back as %q", us, got)
		}
	})
}

// TestGolden pins the exact bytes of a file, as DBAs' scripts depend on them.
func TestGolden(t *testing.T) {
	rows := []state.Sample{mysqlRow(tick, 4243), mysqlRow(tick, 4244), mysqlRow(tick, 4245)}
	rows[1].Thread, rows[1].Exe = "=HYPERLINK(\"x\")", "/srv/my app,v2/bin/\"app\"\n"
	rows[2].Syscall, rows[2].State, rows[2].CPU, rows[2].Wchan = "", state.Runnable, state.Unknown, "-"
	rows[0].State, rows[0].IODev, rows[0].IOOp = state.Uninterruptible, "nvme0n1", "read"
	rows[0].IOBytes, rows[0].IOUs, rows[0].IOQueueUs = 8192, 1520, 0
	rows[2].Span, rows[2].SpanUs, rows[2].SpanArg = "query", 0, "SELECT 1,\x1b\"x\""
	rows[2].Cmdline = "postgres: app shop 127.0.0.1(5432) SELECT"
	rows[2].SplitEstimated = true
	got := []byte(Header())
	for i := range rows {
		got = AppendCSV(got, &rows[i])
	}
	path := filepath.Join("testdata", "rows.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
