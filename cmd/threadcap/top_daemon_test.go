// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestTopLiveDaemon: over the files the real daemon is writing, `threadcap top` (the
// binary, not the test's stand-in) shows a spinner started after it within 3 s. It needs
// root, for the daemon.
func TestTopLiveDaemon(t *testing.T) {
	privileged.Require(t)
	tmp := t.TempDir()
	bin, err := daemontest.Build(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	daemon := daemontest.StartFromShell(t, bin, "--config", "", "--hz", "10", "--dir", dir, "--log-level", "warn")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if files, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv")); len(files) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon wrote no hour file in a minute:\n%s", daemon.Log)
		}
	}

	term := newTerminal(t, 100, 30)
	term.run(fmt.Sprintf("%s top --config '' --dir %s --by process", bin, dir))
	term.waitFor("the live view", func(s string) bool { return strings.Contains(s, "LIVE") && strings.Contains(s, "active rows") })

	// A spinner of a name no other process has, started now.
	name := fmt.Sprintf("tcspin%d", os.Getpid()%100000)
	spinner := exec.Command(copyOf(t, "/bin/sh", filepath.Join(tmp, name)), "-c", "while :; do :; done")
	if err := spinner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spinner.Process.Kill(); spinner.Wait() })
	screen := term.waitWithin("the spinner started after top", liveLimit, func(s string) bool { return strings.Contains(s, name) })
	t.Logf("live, over the daemon's files:\n%s", screen)
	quit(t, term)
}

// copyOf copies an executable to path, so that the process it runs has path's base name.
func copyOf(t *testing.T, src, path string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
