// SPDX-License-Identifier: Apache-2.0

package output

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// TestHourRollover writes a tick every 20 minutes across an hour change, and across both
// DST changes of New York, where local hours are skipped or repeated but UTC hours are not.
func TestHourRollover(t *testing.T) {
	tests := []struct {
		name  string
		start time.Time // first tick; ticks follow every 20 minutes
		ticks int
		// files maps each expected file to the sample_time of its rows.
		files map[string][]string
	}{
		{"plain hour change", time.Date(2026, 11, 21, 13, 20, 0, 0, time.UTC), 4, map[string][]string{
			"threadcap_samples_2026-11-21T13Z.csv": {"2026-11-21T08:20:00.000000-05:00", "2026-11-21T08:40:00.000000-05:00"},
			"threadcap_samples_2026-11-21T14Z.csv": {"2026-11-21T09:00:00.000000-05:00", "2026-11-21T09:20:00.000000-05:00"},
		}},
		{"spring forward skips local 02:00", time.Date(2026, 3, 8, 6, 20, 0, 0, time.UTC), 5, map[string][]string{
			"threadcap_samples_2026-03-08T06Z.csv": {"2026-03-08T01:20:00.000000-05:00", "2026-03-08T01:40:00.000000-05:00"},
			"threadcap_samples_2026-03-08T07Z.csv": {"2026-03-08T03:00:00.000000-04:00", "2026-03-08T03:20:00.000000-04:00", "2026-03-08T03:40:00.000000-04:00"},
		}},
		{"fall back repeats local 01:00", time.Date(2026, 11, 1, 5, 20, 0, 0, time.UTC), 5, map[string][]string{
			"threadcap_samples_2026-11-01T05Z.csv": {"2026-11-01T01:20:00.000000-04:00", "2026-11-01T01:40:00.000000-04:00"},
			"threadcap_samples_2026-11-01T06Z.csv": {"2026-11-01T01:00:00.000000-05:00", "2026-11-01T01:20:00.000000-05:00", "2026-11-01T01:40:00.000000-05:00"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, clock, _ := testConfig(dir, tt.start)
			w := newWriter(t, cfg)
			for i := range tt.ticks {
				tick := tt.start.Add(time.Duration(i) * 20 * time.Minute).In(newYork)
				clock.Set(tick)
				if err := w.Write(tick, mysqlRows(tick, 100, 1)); err != nil {
					t.Fatal(err)
				}
			}
			closeWriter(t, w)
			// One row a tick: each hour's ticks file holds the times its samples do.
			want := map[string][]string{}
			for name, times := range tt.files {
				want[name] = times
				want[hourfile.Ticks.Prefix()+strings.TrimPrefix(name, hourfile.Samples.Prefix())] = times
			}
			got := map[string][]string{}
			for _, name := range dirNames(t, dir) {
				records := readCSV(t, filepath.Join(dir, name))
				if strings.Join(records[0], ",")+"\n" != kindHeader(name) {
					t.Errorf("%s starts with %v, not its header", name, records[0])
				}
				for _, rec := range records[1:] {
					got[name] = append(got[name], rec[0])
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("files and their sample times:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestRestartMidHourAppends(t *testing.T) {
	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 14, 3, 0, 0, time.UTC)
	for run, tick := range []time.Time{first, first.Add(10 * time.Minute)} {
		cfg, _, hook := testConfig(dir, tick)
		w := newWriter(t, cfg)
		if err := w.Write(tick, mysqlRows(tick, int32(100*run), 3)); err != nil {
			t.Fatal(err)
		}
		closeWriter(t, w)
		if run == 1 && countLogs(hook, logrus.InfoLevel, "appending to existing hour file") != 1 {
			t.Errorf("restart did not log that it appends: %v", hook.AllEntries())
		}
	}
	records := readCSV(t, filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv"))
	headers := 0
	for _, rec := range records {
		if rec[0] == "sample_time" {
			headers++
		}
	}
	if headers != 1 || len(records) != 7 {
		t.Errorf("file has %d headers and %d rows, want 1 header and 6 rows", headers, len(records)-1)
	}
}

func TestClockGoingBackStaysInCurrentHour(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 21, 14, 0, 1, 0, time.UTC)
	cfg, _, hook := testConfig(dir, now)
	w := newWriter(t, cfg)
	for _, tick := range []time.Time{now, now.Add(-2 * time.Second), now.Add(-time.Second), now.Add(time.Second)} {
		if err := w.Write(tick, mysqlRows(tick, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	closeWriter(t, w)
	if got := dirNames(t, dir); !reflect.DeepEqual(got, []string{"threadcap_samples_2026-11-21T14Z.csv", "threadcap_ticks_2026-11-21T14Z.csv"}) {
		t.Errorf("files %v, want only the current hour's", got)
	}
	if n := len(readCSV(t, filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv"))) - 1; n != 4 {
		t.Errorf("current hour holds %d rows, want all 4", n)
	}
	if n := countLogs(hook, logrus.WarnLevel, "clock went back before the current hour; rows go to the current hour's file until it catches up"); n != 1 {
		t.Errorf("clock going back logged %d times, want once", n)
	}
}

func TestSecondWriterOnSameDirIsRefused(t *testing.T) {
	cfg, _, _ := testConfig(t.TempDir(), tick)
	w := newWriter(t, cfg)
	defer w.Close()
	if _, err := New(cfg); !errors.Is(err, ErrDirInUse) || !strings.Contains(err.Error(), cfg.Dir) {
		t.Errorf("second writer: %v, want it refused", err)
	}
}

func TestWriteAfterClose(t *testing.T) {
	cfg, _, _ := testConfig(t.TempDir(), tick)
	w := newWriter(t, cfg)
	closeWriter(t, w)
	if err := w.Write(tick, mysqlRows(tick, 1, 1)); err != ErrClosed {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestTicksFileHasEveryTick checks that each tick is in the hour's ticks file once: with
// rows in several batches, and without any row, which the samples file cannot show.
func TestTicksFileHasEveryTick(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 21, 14, 0, 1, 0, time.UTC)
	cfg, _, _ := testConfig(dir, start)
	w := newWriter(t, cfg)
	ticks := []time.Time{start, start.Add(time.Second), start.Add(2 * time.Second)}
	rows := mysqlRows(ticks[0], 1, 3)
	for _, batch := range [][]state.Sample{rows[:2], rows[2:]} {
		if err := w.Write(ticks[0], batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(ticks[1], nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ticks[2], mysqlRows(ticks[2], 10, 1)); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	var got, want []string
	for _, rec := range readCSV(t, filepath.Join(dir, "threadcap_ticks_2026-11-21T14Z.csv")) {
		got = append(got, rec[0])
	}
	want = append(want, "sample_time")
	for _, tick := range ticks {
		want = append(want, tick.Local().Format(hourfile.TimeLayout))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ticks file:\n got %q\nwant %q", got, want)
	}
	if n := len(readCSV(t, filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv"))) - 1; n != 4 {
		t.Errorf("samples file has %d rows, want 4", n)
	}
}

// TestStatsCountWhatReachesEachFile: the bytes Stats counts for each kind of hour file are
// the files' sizes, over two hours and a restart that appends to the second.
func TestStatsCountWhatReachesEachFile(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 21, 13, 59, 58, 0, time.UTC)
	cfg, clock, _ := testConfig(dir, start)
	stack := state.NewStack([]string{"entry_SYSCALL_64", "do_syscall_64", "ksys_read", "pipe_read"})
	want := map[hourfile.Kind]uint64{}
	for run := range 2 {
		w := newWriter(t, cfg)
		for i := range 3 {
			tick := start.Add(time.Duration(run*3+i) * time.Second)
			clock.Set(tick)
			rows := mysqlRows(tick, 100, 3)
			rows[0].KernelStack = stack
			if err := w.Write(tick, rows); err != nil {
				t.Fatal(err)
			}
			io := []state.DiskIO{{Disk: "vda", Op: state.IORead, IOStat: state.IOStat{Requests: 1}}}
			if err := w.WriteIO(tick.Truncate(time.Minute), io); err != nil {
				t.Fatal(err)
			}
			spans := []state.SpanMinute{{Minute: tick.Truncate(time.Minute), Span: "query", Count: 1, WallUs: 5, PartUs: [4]int64{5, 0, 0, 0}}}
			if err := w.WriteSpans(tick.Truncate(time.Minute), spans); err != nil {
				t.Fatal(err)
			}
			profile := []state.ProfileRow{{Minute: tick.Truncate(time.Minute), Pid: 100, Tid: 101, Samples: 1, Hz: 99}}
			if err := w.WriteProfile(tick.Truncate(time.Minute), profile); err != nil {
				t.Fatal(err)
			}
		}
		st := w.Stats()
		closeWriter(t, w)
		if st.WrittenRows != 9 || st.DroppedRows != 0 || st.Paused != "" {
			t.Errorf("run %d: %+v, want 9 rows written, none dropped, not paused", run, st)
		}
		for kind, n := range st.Bytes {
			want[kind] += n
		}
	}
	for _, kind := range hourfile.Kinds() {
		var size uint64
		for _, hour := range []string{"13", "14"} {
			fi, err := os.Stat(filepath.Join(dir, kind.Prefix()+"2026-11-21T"+hour+"Z.csv"))
			if err != nil {
				t.Fatal(err)
			}
			size += uint64(fi.Size())
		}
		if want[kind] != size || size == 0 {
			t.Errorf("%s: Stats counted %d bytes, the files hold %d", kind, want[kind], size)
		}
	}
}
