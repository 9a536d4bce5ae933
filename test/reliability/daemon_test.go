// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// binDir holds the threadcap binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "threadcap-reliability"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// daemonBinary builds threadcap once for the tests that run it as operators do.
var daemonBinary = sync.OnceValues(func() (string, error) { return daemontest.Build(binDir) })

// daemon is a running `threadcap run`, its log kept.
type daemon struct {
	cmd *exec.Cmd
	log *daemontest.SyncBuffer
}

// startDaemon runs threadcap with args, stopped with SIGKILL when the test ends.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	privileged.Require(t)
	bin, err := daemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{log: &daemontest.SyncBuffer{}}
	d.cmd = exec.Command(bin, append([]string{"run"}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	return d
}

// stop sends SIGTERM and checks that threadcap exits 0.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("threadcap did not exit cleanly on SIGTERM: %v\n%s", err, d.log)
	}
}

// kill sends SIGKILL, as the OOM killer or a power cut would end it.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	d.cmd.Process.Kill()
	d.cmd.Wait()
}

// alive fails the test if threadcap has exited.
func (d *daemon) alive(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("threadcap is no longer running: %v\n%s", err, d.log)
	}
}

// waitLog waits up to a minute (threadcap seeds from /proc first, which on a busy machine
// takes a while) for a log line containing part.
func (d *daemon) waitLog(t *testing.T, part string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(d.log.String(), part) {
			return
		}
		d.alive(t)
	}
	t.Fatalf("threadcap never logged %q:\n%s", part, d.log)
}

// waitRows waits up to a minute for the hour files in dir to hold more than n bytes of rows.
func waitRows(t *testing.T, dir string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var size int64
		names, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
		for _, name := range names {
			if fi, err := os.Stat(name); err == nil {
				size += fi.Size()
			}
		}
		if size > n {
			return
		}
	}
	t.Fatalf("the hour files in %s never grew past %d bytes", dir, n)
}
