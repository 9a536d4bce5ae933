// SPDX-License-Identifier: Apache-2.0

package daemontest

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
)

// Daemon is a `threadcap run` a test started and waited for until it told systemd it was
// ready, its output kept in Log.
type Daemon struct {
	Cmd *exec.Cmd
	Log *SyncBuffer
	// done is closed once the process is waited for; err is what Wait returned.
	done chan struct{}
	err  error
}

// Start runs `bin run args...` as systemd runs the service (NOTIFY_SOCKET set), waits for
// READY=1 (at most patience) and returns it. It is killed when the test ends, unless
// stopped before; its log is shown when the test failed.
func Start(t testing.TB, bin string, patience time.Duration, args ...string) *Daemon {
	t.Helper()
	notify := filepath.Join(t.TempDir(), "notify")
	systemd := ListenNotify(t, notify)
	d := &Daemon{Cmd: exec.Command(bin, append([]string{"run"}, args...)...), Log: &SyncBuffer{}, done: make(chan struct{})}
	d.Cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify)
	d.Cmd.Stdout, d.Cmd.Stderr = d.Log, d.Log
	if err := d.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.Cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.Cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("threadcap's log:\n%s", d.Log)
		}
	})
	if got := Receive(t, systemd, patience); got != "READY=1" {
		t.Fatalf("threadcap notified %q first, want READY=1\n%s", got, d.Log)
	}
	return d
}

// Stop sends SIGTERM, as systemctl stop does, and fails the test unless threadcap exits 0.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d.done
	if d.err != nil {
		t.Fatalf("threadcap run: %v\n%s", d.err, d.Log)
	}
}

// ReadTable reads every readable hour file of kind in dir, plain or compressed (an hour
// that ended during the test is), as maps from column to value.
func ReadTable(t testing.TB, dir string, kind hourfile.Kind) []map[string]string {
	t.Helper()
	files, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range files {
		if f.Kind != kind || !f.Readable() {
			continue
		}
		fh, err := hourfile.Open(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		all, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		for _, rec := range all[1:] {
			m := map[string]string{}
			for i, name := range all[0] {
				m[name] = rec[i]
			}
			out = append(out, m)
		}
	}
	return out
}
