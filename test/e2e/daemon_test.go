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

// daemon is one running `threadcap run`.
type daemon struct {
	cmd  *exec.Cmd
	log  *daemontest.SyncBuffer
	done chan struct{}
	err  error // from Wait, once done is closed
}

// start runs `threadcap run --config "" --dir dir` with args after them (so that they
// may name a config file).
func start(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	return startEnv(t, nil, dir, args...)
}

// startEnv is start with these environment variables added.
func startEnv(t *testing.T, env []string, dir string, args ...string) *daemon {
	t.Helper()
	d := &daemon{log: &daemontest.SyncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(binary, append([]string{"run", "--config", "", "--dir", dir}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		if !d.exited() {
			d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("threadcap's log:\n%s", d.log.String())
		}
	})
	return d
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// waitFor polls cond until it holds, failing the test if the daemon exits first or
// patience runs out.
func (d *daemon) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if d.exited() {
			t.Fatalf("threadcap exited (%v) before %s", d.err, what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// stop sends SIGTERM and checks that threadcap exits 0 within stopLimit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	sent := time.Now()
	d.signal(t, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(patience):
		t.Fatalf("threadcap still running %v after SIGTERM", patience)
	}
	took := time.Since(sent)
	t.Logf("threadcap exited %v after SIGTERM", took)
	if took > stopLimit {
		t.Errorf("threadcap took %v to exit after SIGTERM, want at most %v", took, stopLimit)
	}
	if d.err != nil {
		t.Errorf("threadcap exited with %v after SIGTERM, want 0", d.err)
	}
}

// exitCode runs threadcap with args to its end, returning its exit code and output.
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
