// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
)

// patience bounds every wait for something the daemon should do soon. It only bounds a
// broken run: on a loaded machine, starting and loading the programs can take seconds.
const patience = 30 * time.Second

// stopLimit is the hard requirement: SIGTERM to exit, file flushed and programs detached.
const stopLimit = 2 * time.Second

// start runs `threadcap run --config "" --dir dir` with args after them (so that they
// may name a config file), as from a shell.
func start(t *testing.T, dir string, args ...string) *daemontest.Daemon {
	t.Helper()
	return daemontest.StartFromShell(t, binary, append([]string{"--config", "", "--dir", dir}, args...)...)
}

// waitFor polls cond until it holds, failing the test if the daemon exits first or
// patience runs out.
func waitFor(t *testing.T, d *daemontest.Daemon, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if d.Exited() {
			t.Fatalf("threadcap exited (%v) before %s", d.Err(), what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and checks that threadcap exits 0 within stopLimit.
func stop(t *testing.T, d *daemontest.Daemon) {
	t.Helper()
	took, err := d.Shutdown(syscall.SIGTERM, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("threadcap exited %v after SIGTERM", took)
	if took > stopLimit {
		t.Errorf("threadcap took %v to exit after SIGTERM, want at most %v", took, stopLimit)
	}
	if err := d.Err(); err != nil {
		t.Errorf("threadcap exited with %v after SIGTERM, want 0", err)
	}
}

// exitCode runs threadcap with args to its end and returns its exit code and output. It
// is for runs that end by themselves (a refused start, a subcommand); daemontest's
// launcher is for a daemon that runs until it is stopped.
func exitCode(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	timer := time.AfterFunc(patience, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// sharedDir is a temporary directory other users can write to, for runs as nobody.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "threadcap-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
