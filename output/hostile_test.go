// SPDX-License-Identifier: Apache-2.0

package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
)

// TestPlantedHourFileIsNotFollowed plants, under the current hour's name, what another
// user could: a symlink to a file outside the directory (an existing one, and one that does
// not exist yet), and a FIFO. Nothing outside the directory may be written, created or
// chmod-ed, and threadcap writes its rows to a fresh file of its own.
func TestPlantedHourFileIsNotFollowed(t *testing.T) {
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	plants := []struct {
		name  string
		plant func(t *testing.T, path, outside string)
	}{
		{"symlink to an existing file", func(t *testing.T, path, outside string) {
			if err := os.WriteFile(outside, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"dangling symlink", func(t *testing.T, path, outside string) {
			if err := os.Symlink(outside, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"FIFO", func(t *testing.T, path, _ string) {
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			outside := filepath.Join(elsewhere, "target")
			path := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.CSV))
			p.plant(t, path, outside)
			before, _ := os.ReadFile(outside)

			cfg, _, hook := testConfig(dir, hour)
			w := newWriter(t, cfg)
			if err := w.Write(hour, mysqlRows(hour, 1, 3)); err != nil {
				t.Fatalf("Write: %v", err)
			}
			closeWriter(t, w)
			after, _ := os.ReadFile(outside)
			if string(after) != string(before) {
				t.Errorf("the file outside the directory changed: %q, was %q", after, before)
			}
			if fi, err := os.Stat(outside); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("the file outside the directory got mode %v", fi.Mode())
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s is not a regular file of threadcap's: %v %v", path, fi, err)
			}
			if n := len(readCSV(t, path)) - 1; n != 3 {
				t.Errorf("hour file holds %d rows, want 3", n)
			}
			aside := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.NotAFile))
			if _, err := os.Lstat(aside); err != nil {
				t.Errorf("the planted file was not kept as %s: %v", aside, err)
			}
			if !hasLog(hook, logrus.WarnLevel, "moved it aside") {
				t.Error("moving the planted file aside was not logged")
			}
		})
	}
}

// TestPlantedTmpFileIsNotFollowed plants a symlink where compression writes its temporary
// file: the compressed copy must not land in the file it points to.
func TestPlantedTmpFileIsNotFollowed(t *testing.T) {
	dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	cfg, clock, _ := testConfig(dir, hour)
	cfg.Compress = CompressGzip
	w := newWriter(t, cfg)
	if err := w.Write(hour, mysqlRows(hour, 1, 2)); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.Gzip+hourfile.Tmp))
	if err := os.Symlink(outside, tmp); err != nil {
		t.Fatal(err)
	}
	next := hour.Add(time.Hour)
	clock.Set(next)
	if err := w.Write(next, mysqlRows(next, 3, 1)); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.Gzip))
	waitFor(t, func() bool { _, err := os.Stat(gz); return err == nil })
	closeWriter(t, w)
	if got, _ := os.ReadFile(outside); string(got) != "keep\n" {
		t.Errorf("compression wrote through the planted link: %q", got)
	}
	if n := len(readCSV(t, gz)) - 1; n != 2 {
		t.Errorf("compressed hour holds %d rows, want 2", n)
	}
}

// TestDeletedDirIsRecreated removes the whole directory, then only the hour file, while
// the writer runs: each time the next tick's rows land in a new, valid file.
func TestDeletedDirIsRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	cfg, _, hook := testConfig(dir, hour)
	w := newWriter(t, cfg)
	defer w.Close()
	path := filepath.Join(dir, hourfile.Samples.Name(hour, hourfile.CSV))
	tick := hour
	write := func() {
		t.Helper()
		tick = tick.Add(time.Second)
		if err := w.Write(tick, mysqlRows(tick, 1, 2)); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	write()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	write()
	if n := len(readCSV(t, path)) - 1; n != 2 {
		t.Errorf("after deleting the directory the new file holds %d rows, want the 2 of the tick after", n)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != DefaultDirMode {
		t.Errorf("recreated directory: %v %v, want mode %v", fi, err, DefaultDirMode)
	}
	if !hasLog(hook, logrus.WarnLevel, "output dir was deleted") {
		t.Error("recreating the directory was not logged")
	}
	// The new directory is locked like the first one.
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "another threadcap") {
		t.Errorf("a second writer on the recreated directory: %v, want it refused", err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	write()
	write()
	if n := len(readCSV(t, path)) - 1; n != 4 {
		t.Errorf("after deleting the hour file the new one holds %d rows, want the 4 of the ticks after", n)
	}
	if !hasLog(hook, logrus.WarnLevel, "hour file was deleted") {
		t.Error("restarting the deleted hour file was not logged")
	}
}

// hasLog reports whether an entry at level has a message containing part.
func hasLog(hook interface{ AllEntries() []*logrus.Entry }, level logrus.Level, part string) bool {
	for _, e := range hook.AllEntries() {
		if e.Level == level && strings.Contains(e.Message, part) {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to 10 s, for background work.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for background work")
		}
	}
}
