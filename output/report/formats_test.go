// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
	"github.com/threadcap/threadcap/state"
)

// recordHours writes 180 one-second ticks of tickRows from 13:58:30 UTC, with a kernel
// stack on the D-state rows, and a minute of spans and block I/O at each minute, the
// closed hour compressed with gzip.
func recordHours(t *testing.T) string {
	t.Helper()
	stack := state.NewStack([]string{"entry_SYSCALL_64", "ksys_pread64", "io_schedule"})
	first := start.Add(-90 * time.Second)
	return writeRows(t, first, 180, func(tick time.Time, i int) []state.Sample {
		rows := tickRows(tick, i)
		for j := range rows {
			if rows[j].State == state.Uninterruptible {
				rows[j].KernelStack = stack
			}
		}
		return rows
	}, output.CompressGzip, "threadcap_samples_2026-11-21T13Z.csv.gz", "threadcap_ticks_2026-11-21T13Z.csv.gz",
		"threadcap_stacks_2026-11-21T13Z.csv.gz")
}

// addMinutes writes a minute of spans and block I/O for each minute from 13:58 to 14:01.
func addMinutes(t *testing.T, dir string) {
	t.Helper()
	first := start.Add(-2 * time.Minute)
	for i := range 4 {
		minute := first.Add(time.Duration(i) * time.Minute)
		w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return minute.Add(30 * time.Second) },
			Log: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		q := state.SpanMinute{Minute: minute, Span: "query", Count: 10 + int64(i), WallUs: 9000, PartUs: [4]int64{1000, 0, 8000, 0}}
		q.WallHist[13], q.CPUHist[10] = 10+uint64(i), 10+uint64(i)
		if err := w.WriteSpans(minute, []state.SpanMinute{q}); err != nil {
			t.Fatal(err)
		}
		r := state.DiskIO{Disk: "=vda", Op: state.IORead, IOStat: state.IOStat{Requests: 100 + uint64(i), Bytes: 4096, DeviceNs: 1e6}}
		r.QueueHist[0], r.DeviceHist[7] = 100+uint64(i), 100+uint64(i)
		if err := w.WriteIO(minute, []state.DiskIO{r}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func quiet() *logrus.Entry {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return logrus.NewEntry(log)
}

// renderAll renders every view of the window from 13:58:30 to 14:01:30: table, CSV and JSON
// breakdowns and timelines, folded stacks and the latency view. The files read are left
// out of the JSON, as they are named by format.
func renderAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	w := Window{From: start.Add(-90 * time.Second).In(paris), To: start.Add(90 * time.Second).In(paris)}
	out := map[string]string{}
	for name, q := range map[string]Query{
		"breakdown": {Window: w, By: []string{"process", "state", "syscall", "span", "seeded", "io_dev"}},
		"timeline":  {Window: w, Step: StepMinute},
		"seconds":   {Window: w, Step: StepSecond},
	} {
		r, err := Run(dir, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Damaged) != 0 {
			t.Errorf("%s: damaged files %+v", name, r.Damaged)
		}
		r.Files = nil
		for _, format := range []string{FormatTable, FormatCSV, FormatJSON} {
			var b bytes.Buffer
			if err := Render(&b, r, format, 0); err != nil {
				t.Fatal(err)
			}
			out[name+"."+format] = b.String()
		}
	}
	stacks, _, err := Folded(dir, Query{Window: w})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderFolded(&b, stacks); err != nil {
		t.Fatal(err)
	}
	out["folded"] = b.String()
	lat, err := Latency(dir, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatTable, FormatCSV, FormatJSON} {
		var b bytes.Buffer
		if err := RenderLatency(&b, lat, w, format); err != nil {
			t.Fatal(err)
		}
		out["latency."+format] = b.String()
	}
	return out
}

// TestParquetHoursReadAsTheirCSV: with the closed hour converted to Parquet and its CSV
// files gone (output.format parquet), every view gives exactly what it gave from the CSV.
func TestParquetHoursReadAsTheirCSV(t *testing.T) {
	dir := recordHours(t)
	addMinutes(t, dir)
	want := renderAll(t, dir)
	if !strings.Contains(want["folded"], "io_schedule") || !strings.Contains(want["latency.table"], "query") ||
		!strings.Contains(want["latency.table"], "'=vda") && !strings.Contains(want["latency.table"], "=vda") {
		t.Fatalf("the fixture misses stacks, spans or block I/O:\n%s\n%s", want["folded"], want["latency.table"])
	}
	all, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	converted := 0
	for _, f := range all {
		if !f.Readable() || f.Hour.After(start.Add(-time.Hour)) {
			continue
		}
		if _, _, err := parquet.ConvertHour(context.Background(), dir, f, "db-7", parquet.FileOptions{GID: -1}); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(f.Path); err != nil {
			t.Fatal(err)
		}
		converted++
	}
	if converted != 5 {
		t.Fatalf("converted %d files of 13:00, want the samples, stacks, ticks, io and spans", converted)
	}
	got := renderAll(t, dir)
	for name := range want {
		if got[name] != want[name] {
			t.Errorf("%s with 13:00 as Parquet:\n%s\nfrom CSV:\n%s", name, got[name], want[name])
		}
	}
}

// TestDamagedHourAmongGoodOnes: a damaged line costs that line, a compressed hour cut
// short the rows after the cut, an hour that cannot be opened itself; the other hours give
// exactly their answers, and every output names the damaged file.
func TestDamagedHourAmongGoodOnes(t *testing.T) {
	dir := recordHours(t)
	closed := filepath.Join(dir, "threadcap_samples_2026-11-21T13Z.csv.gz")
	whole, err := os.ReadFile(closed)
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Window: Window{From: start.Add(-90 * time.Second), To: start.Add(90 * time.Second)}, By: []string{"state", "syscall"}}
	current := q
	current.Window.From = start
	want, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	wantCurrent, err := Run(dir, current)
	if err != nil {
		t.Fatal(err)
	}

	plain := gunzip(t, whole)
	lines := strings.SplitAfter(string(plain), "\n")
	for _, tc := range []struct {
		name     string
		content  []byte
		sameRows bool  // the damage takes no row
		lost     int64 // -1: the row the cut went through, when it went through one
		tail     bool
		notRead  bool
	}{
		{"a line with an open quote", gz(t, strings.Join(lines[:20], "")+"garbage,\"unterminated\n"+strings.Join(lines[20:], "")), true, 1, false, false},
		{"a row cut short", gz(t, strings.Join(lines[:20], "")+lines[20][:30]+"\n"+strings.Join(lines[21:], "")), false, 1, false, false},
		{"cut short", whole[:len(whole)/2], false, -1, true, false},
		{"not gzip", []byte("plain text\n"), false, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(closed, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Run(dir, q)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lost < 0 && len(got.Damaged) == 1 && got.Damaged[0].Lost <= 1 {
				tc.lost = got.Damaged[0].Lost
			}
			if len(got.Damaged) != 1 || got.Damaged[0].File != closed || got.Damaged[0].Lost != tc.lost ||
				(got.Damaged[0].Tail != "") != tc.tail || (got.Damaged[0].NotRead != "") != tc.notRead {
				t.Fatalf("damaged %+v, want %s named with %d lost, tail %v, not read %v", got.Damaged, closed, tc.lost, tc.tail, tc.notRead)
			}
			if got.Ticks != want.Ticks || got.Malformed != tc.lost {
				t.Errorf("%d ticks (the ticks files are whole), %d malformed; want %d and %d", got.Ticks, got.Malformed, want.Ticks, tc.lost)
			}
			if tc.sameRows && (got.Rows != want.Rows || !reflect.DeepEqual(got.Groups, want.Groups)) {
				t.Errorf("%d rows in %v, want %d in %v", got.Rows, got.Groups, want.Rows, want.Groups)
			}
			if !tc.sameRows && got.Rows+got.Inactive >= want.Rows+want.Inactive {
				t.Errorf("%d rows, want fewer than %d", got.Rows+got.Inactive, want.Rows+want.Inactive)
			}
			// The current hour, alone, is as it was.
			if c, err := Run(dir, current); err != nil || !reflect.DeepEqual(c, wantCurrent) {
				t.Errorf("the current hour alone: %+v, %v; want %+v", c, err, wantCurrent)
			}
			for _, format := range []string{FormatTable, FormatJSON} {
				var b bytes.Buffer
				if err := Render(&b, got, format, 0); err != nil {
					t.Fatal(err)
				}
				head := b.String()
				if format == FormatTable {
					head, _, _ = strings.Cut(head, "\n\n")
				}
				if !strings.Contains(head, closed) {
					t.Errorf("the %s output does not name %s:\n%s", format, closed, b.String())
				}
				if format == FormatJSON {
					var j struct {
						Damaged []FileDamage `json:"damaged_files"`
					}
					if err := json.Unmarshal(b.Bytes(), &j); err != nil || !reflect.DeepEqual(j.Damaged, got.Damaged) {
						t.Errorf("damaged_files %+v (%v), want %+v", j.Damaged, err, got.Damaged)
					}
				}
			}
		})
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDamagedTicksFile: an hour whose ticks file is cut short counts the ticks its rows
// show where they are more, so that its averages do not grow with the damage; with every
// tick holding a row, the answers are exactly those of the whole file, and the file is
// named.
func TestDamagedTicksFile(t *testing.T) {
	dir := recordHours(t)
	ticks := filepath.Join(dir, "threadcap_ticks_2026-11-21T13Z.csv.gz")
	q := Query{Window: Window{From: start.Add(-90 * time.Second), To: start.Add(90 * time.Second)}, By: []string{"state", "syscall"}}
	tq := q
	tq.Step = StepSecond
	want, err := Run(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	wantTimeline, err := Run(dir, tq)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(ticks)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ticks, whole[:len(whole)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    Query
		want *Result
	}{{q, want}, {tq, wantTimeline}} {
		got, err := Run(dir, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Damaged) != 1 || got.Damaged[0].File != ticks || got.Damaged[0].Tail == "" {
			t.Errorf("damaged %+v, want %s named with its unread tail", got.Damaged, ticks)
		}
		got.Damaged, got.Malformed = nil, 0
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("step %v: %d ticks, %d rows; want %d, %d: the rows' ticks make up for the damaged file's",
				tc.q.Step, got.Ticks, got.Rows, tc.want.Ticks, tc.want.Rows)
		}
	}
}
