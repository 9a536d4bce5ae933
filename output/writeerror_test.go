// SPDX-License-Identifier: Apache-2.0

package output

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
)

// TestWriteErrorPausesAndRetries makes writes fail with an error that is neither a full
// disk nor a read-only file system (EFBIG, from a file size limit: Go ignores the SIGXFSZ
// that comes with it). The writer must keep the file valid, count every row once, say so
// once, and write again as soon as it can, never stop the daemon with an error.
func TestWriteErrorPausesAndRetries(t *testing.T) {
	dir := t.TempDir()
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	cfg, clock, hook := testConfig(dir, hour)
	w := newWriter(t, cfg)
	defer w.Close()

	f := newTickFeeder(t, w, clock, hour)
	path := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.CSV))
	// The limit applies to every file the process writes, go test's own log of the files a
	// test opens too: the hour file is made larger than that log can be by now, so that
	// only the writer's writes reach the limit.
	var fi os.FileInfo
	var err error
	for fi == nil || fi.Size() < 4<<20 {
		f.write()
		if fi, err = os.Stat(path); err != nil {
			t.Fatal(err)
		}
	}

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}
	defer restore()
	// Room for a row and a half: the next tick's write is cut inside a row.
	limit := uint64(fi.Size()) + uint64(len(f.sent["0"])*3/2)
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.write()
	}
	restore()
	if w.DroppedRows() == 0 {
		t.Fatal("no row was dropped while the file could not grow")
	}
	checkWholeRows(t, w, path, f)

	written := w.WrittenRows()
	f.write()
	if w.WrittenRows() != written+37 {
		t.Errorf("once writes worked again %d rows were written, want the tick's 37", w.WrittenRows()-written)
	}
	checkWholeRows(t, w, path, f)
	if n := countLogs(hook, logrus.WarnLevel, causeWriteError.stop); n != 1 {
		t.Errorf("the failing writes logged %d times, want once", n)
	}
	if n := countLogs(hook, logrus.InfoLevel, causeWriteError.resume); n != 1 {
		t.Errorf("writing again logged %d times, want once", n)
	}
}

// TestPauseNamesTheCauseOnceKnown follows ext4 failing under the writer: the sync fails
// with EIO (a plain write error), then every write with EROFS. Both are said, once each;
// Stats and the resume give the read-only cause; nothing after it is said again.
func TestPauseNamesTheCauseOnceKnown(t *testing.T) {
	cfg, _, hook := testConfig(t.TempDir(), time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC))
	w := newWriter(t, cfg)
	defer w.Close()
	w.mu.Lock()
	for _, err := range []error{unix.EIO, unix.EROFS, unix.EIO, unix.EROFS, unix.ENOSPC} {
		w.pause(pauseCauseOf(err), nil)
	}
	if got := w.Stats().Paused; got != PausedReadOnly {
		t.Errorf("Stats says paused %q, want %q", got, PausedReadOnly)
	}
	w.resume()
	w.mu.Unlock()
	for _, c := range []struct {
		level logrus.Level
		msg   string
		want  int
	}{
		{logrus.WarnLevel, causeWriteError.stop, 1},
		{logrus.WarnLevel, causeReadOnly.stop, 1},
		{logrus.WarnLevel, causeNoSpace.stop, 0},
		{logrus.InfoLevel, causeReadOnly.resume, 1},
		{logrus.InfoLevel, causeWriteError.resume, 0},
	} {
		if n := countLogs(hook, c.level, c.msg); n != c.want {
			t.Errorf("%q logged %d times, want %d", c.msg, n, c.want)
		}
	}
}
