// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// errorLines are the screen's lines that say what went wrong.
func errorLines(screen string) []string {
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "error: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestTopBadInput: what can go wrong with the files is one line on screen, never a crash
// or a garbled terminal.
func TestTopBadInput(t *testing.T) {
	t.Run("cut last line", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		to := time.Now().Add(-time.Hour).Truncate(time.Minute)
		from := to.Add(-time.Minute)
		recordPast(t, dir, from, to)
		files, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
		f, err := os.OpenFile(files[len(files)-1], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A row cut short by a crash: its time is in the window, its fields end early.
		f.WriteString(to.Add(-time.Second).UTC().Format(time.RFC3339Nano) + ",101,101,spin")
		f.Close()
		window := []string{"--dir", dir, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
		term := newTerminal(t, 80, 24)
		term.run(topCommandLine(t, 0, window...))
		want := reportJSON(t, window...)
		screen := term.waitFor("the report's totals", func(s string) bool { return strings.Contains(s, want.summary()) })
		checkTable(t, screen, want)
		quit(t, term)
	})

	t.Run("no such directory", func(t *testing.T) {
		term := newTerminal(t, 80, 24)
		term.run(topCommandLine(t, 0, "--dir", filepath.Join(t.TempDir(), "missing")))
		screen := term.waitFor("an error", func(s string) bool { return len(errorLines(s)) == 1 })
		// The status line cuts it; with nothing else to show, the whole of it is above.
		if !strings.Contains(strings.Join(strings.Fields(screen), " "), "give the directory threadcap writes to with --dir") {
			t.Errorf("the screen does not say what to do:\n%s", screen)
		}
		checkFits(t, term, 80, 24)
		quit(t, term)
	})

	t.Run("not a gzip file", func(t *testing.T) {
		// A file that cannot be read costs only itself: the report names it, and so does
		// the status line.
		dir := t.TempDir()
		hour := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Hour)
		name := "threadcap_samples_" + hour.Format("2006-01-02T15Z") + ".csv.gz"
		if err := os.WriteFile(filepath.Join(dir, name), []byte("\x1b[2Jnot gzip\n\x00\xff"), 0o644); err != nil {
			t.Fatal(err)
		}
		term := newTerminal(t, 80, 24)
		term.run(topCommandLine(t, 0, "--dir", dir, "--from", hour.Format(time.RFC3339), "--to", hour.Add(time.Hour).Format(time.RFC3339)))
		screen := term.waitFor("the damaged file named", func(s string) bool {
			return regexp.MustCompile(`(?m)^damaged: .*` + regexp.QuoteMeta(name)).MatchString(s)
		})
		t.Logf("%s", screen)
		checkFits(t, term, 80, 24)
		quit(t, term)
	})

	t.Run("files deleted while live", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		recordLive(t, dir, time.Now)
		term := newTerminal(t, 80, 24)
		term.run(topCommandLine(t, 0, "--dir", dir, "--by", "process"))
		term.waitFor("the live view", func(s string) bool { return strings.Contains(s, "spinner") })
		// Retention deletes the hours, the writer starts the current one again: top goes on.
		for i := 0; i < 5; i++ {
			files, _ := filepath.Glob(filepath.Join(dir, "threadcap_*"))
			for _, f := range files {
				os.Remove(f)
			}
			time.Sleep(300 * time.Millisecond)
		}
		term.waitFor("the live view again", func(s string) bool {
			return strings.Contains(s, "spinner") && strings.Contains(s, "LIVE") && len(errorLines(s)) == 0
		})
		checkFits(t, term, 80, 24)
		quit(t, term)
	})

	t.Run("unreadable directory", func(t *testing.T) {
		// As root, top runs as nobody (setpriv) over a directory only root may read; as
		// anyone else, over a directory of mode 0.
		dir := filepath.Join(t.TempDir(), "data")
		recordPast(t, dir, time.Now().Add(-2*time.Minute), time.Now().Add(-time.Minute))
		line := topCommandLine(t, 0, "--dir", dir)
		if os.Geteuid() == 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			line = "setpriv --reuid=65534 --regid=65534 --clear-groups " + strings.Replace(line, "THREADCAP", "env THREADCAP", 1)
			line = strings.Replace(line, testBinary(t), copyForNobody(t), 1)
		} else {
			if err := os.Chmod(dir, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
		}
		term := newTerminal(t, 80, 24)
		term.run(line)
		screen := term.waitFor("an error", func(s string) bool { return len(errorLines(s)) == 1 })
		if !strings.Contains(strings.Join(strings.Fields(screen), " "), "this user may not read threadcap's files") {
			t.Errorf("the screen does not say who may read the files:\n%s", screen)
		}
		checkFits(t, term, 80, 24)
		quit(t, term)
	})
}

func testBinary(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// copyForNobody copies this test binary where any user may run it.
func copyForNobody(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "threadcap-top-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "threadcap.test")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
