// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/test/privileged"
)

// mountTmpfs mounts a file system of size bytes, to fill up for real.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	privileged.Require(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mounting a tmpfs as root: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// TestDiskFull fills a real file system and checks what a DBA would: the file still parses,
// every row counted as written is in it whole, the event is logged once, and writing
// resumes once space is freed.
func TestDiskFull(t *testing.T) {
	tests := []struct {
		name         string
		minFreeBytes int64
	}{
		{"write fails with ENOSPC", 0},
		{"free space falls below the floor", 96 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := mountTmpfs(t, "256k")
			// The filler stands for the database's own files, deleted later to free space.
			filler := filepath.Join(dir, "filler")
			if err := os.WriteFile(filler, make([]byte, 96<<10), 0o600); err != nil {
				t.Fatal(err)
			}
			hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
			cfg, clock, hook := testConfig(dir, hour)
			cfg.MinFreeBytes = tt.minFreeBytes
			w := newWriter(t, cfg)
			defer w.Close()

			f := newTickFeeder(t, w, clock, hour)
			for i := 0; w.DroppedRows() == 0; i++ {
				if i == 1000 {
					t.Fatal("never ran out of space")
				}
				f.write()
			}
			if got := w.Stats().Paused; got != PausedNoSpace {
				t.Errorf("while dropping rows, Stats says paused %q, want %q", got, PausedNoSpace)
			}
			path := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.CSV))
			before := modTime(t, path)
			time.Sleep(20 * time.Millisecond) // past the file system's timestamp granularity
			for range 5 {
				f.write() // ticks while full only count their rows
			}
			// A write that failed part way and was cut off again would show in the
			// modification time: readers of the live file would have seen a partial row.
			if after := modTime(t, path); !after.Equal(before) {
				t.Errorf("ticks while the disk was full wrote to the file (modified %v, then %v)", before, after)
			}
			checkWholeRows(t, w, path, f)

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			written := w.WrittenRows()
			f.write()
			if w.WrittenRows() != written+37 {
				t.Errorf("after freeing space %d rows were written, want the tick's 37", w.WrittenRows()-written)
			}
			if got := w.Stats().Paused; got != "" {
				t.Errorf("writing again, Stats says paused %q", got)
			}
			checkWholeRows(t, w, path, f)
			// The ticks whose rows were dropped are left out of the ticks file with them;
			// the tick that wrote again is in it.
			withRows := map[string]bool{}
			for _, rec := range readCSV(t, path)[1:] {
				withRows[rec[0]] = true
			}
			ticks := readCSV(t, filepath.Join(dir, hourfile.Ticks.Name(hour, hourfile.CSV)))[1:]
			for _, rec := range ticks {
				if !withRows[rec[0]] {
					t.Errorf("tick %s is in the ticks file, but its rows were dropped", rec[0])
				}
			}
			if last := f.tick.Local().Format(hourfile.TimeLayout); len(ticks) == 0 || ticks[len(ticks)-1][0] != last {
				t.Errorf("the tick after space was freed (%s) is not the ticks file's last: %v", last, ticks)
			}
			if n := countLogs(hook, logrus.WarnLevel, "out of disk space: dropping rows until space is freed"); n != 1 {
				t.Errorf("running out of space logged %d times, want once", n)
			}
			resumed := 0
			for _, e := range hook.AllEntries() {
				if e.Message == "disk space is back: writing rows again" {
					resumed++
					if e.Data[fieldDropped] != w.DroppedRows() {
						t.Errorf("resume logged %v dropped rows, want %d", e.Data[fieldDropped], w.DroppedRows())
					}
				}
			}
			if resumed != 1 {
				t.Errorf("resuming logged %d times, want once", resumed)
			}
		})
	}
}

func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// checkWholeRows checks that the file holds exactly the rows counted as written, each one
// whole and as it was sent, and that no row was both written and dropped.
func checkWholeRows(t *testing.T, w *Writer, path string, f *tickFeeder) {
	t.Helper()
	content := readPlain(t, path)
	if !bytes.HasSuffix(content, []byte("\n")) {
		t.Errorf("file ends in a partial row: ...%q", content[max(0, len(content)-40):])
	}
	records := readCSV(t, path)
	if len(records)-1 != int(w.WrittenRows()) {
		t.Errorf("file has %d rows, writer counts %d written", len(records)-1, w.WrittenRows())
	}
	if w.WrittenRows()+w.DroppedRows() != uint64(f.tid) {
		t.Errorf("written %d + dropped %d != %d rows given", w.WrittenRows(), w.DroppedRows(), f.tid)
	}
	// Walk the raw bytes row by row, so a row cut and glued to the next cannot hide.
	rest := content[len(schema.Header()):]
	tid := slices.IndexFunc(schema.Columns, func(c schema.Column) bool { return c.Name == "tid" })
	for _, rec := range records[1:] {
		row, ok := f.sent[rec[tid]]
		if !ok || !bytes.HasPrefix(rest, row) {
			t.Fatalf("row of tid %s is not a row that was sent: %q", rec[tid], rest[:min(len(rest), 200)])
		}
		rest = rest[len(row):]
	}
}

// tickFeeder writes ticks of 37 rows, one second apart, and keeps every row it gave the
// writer as encoded, by tid: what checkWholeRows compares the file with.
type tickFeeder struct {
	t     *testing.T
	w     *Writer
	clock *fakeClock
	tick  time.Time
	tid   int32 // the next row's tid: also how many rows were given
	sent  map[string][]byte
}

func newTickFeeder(t *testing.T, w *Writer, clock *fakeClock, hour time.Time) *tickFeeder {
	return &tickFeeder{t: t, w: w, clock: clock, tick: hour, sent: map[string][]byte{}}
}

// write writes the next tick; a failing disk must not make Write return an error.
func (f *tickFeeder) write() {
	f.t.Helper()
	f.tick = f.tick.Add(time.Second)
	f.clock.Set(f.tick)
	rows := mysqlRows(f.tick, f.tid, 37)
	for i := range rows {
		// Long, quoted values make a cut likely to land inside a row.
		rows[i].Exe = strings.Repeat("/opt/a \"b\",c", 1+int(f.tid)%7)
		f.sent[strconv.Itoa(int(f.tid))] = schema.AppendCSV(nil, &rows[i])
		f.tid++
	}
	if err := f.w.Write(f.tick, rows); err != nil {
		f.t.Fatalf("Write: %v", err)
	}
}
