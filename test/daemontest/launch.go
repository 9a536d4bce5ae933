// SPDX-License-Identifier: Apache-2.0

package daemontest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
)

// stopPatience bounds the wait for threadcap to exit at Stop. It only bounds a broken run:
// threadcap exits within two seconds of SIGTERM (test/e2e holds it to that).
const stopPatience = time.Minute

// Daemon is a running `threadcap run`, its output kept in Log.
type Daemon struct {
	Cmd *exec.Cmd
	Log *SyncBuffer
	// systemd is the end of NOTIFY_SOCKET it was started with, nil if none.
	systemd *net.UnixConn
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
	d := startForTest(t, bin, []string{"NOTIFY_SOCKET=" + notify}, args)
	d.systemd = systemd
	if got := Receive(t, systemd, patience); got != "READY=1" {
		t.Fatalf("threadcap notified %q first, want READY=1\n%s", got, d.Log)
	}
	return d
}

// StartFromShell runs `bin run args...` as an operator does from a shell: with no
// NOTIFY_SOCKET, nothing says when it is ready, so it returns at once, and the test waits
// for what it needs (rows, a log line). It is killed when the test ends, unless stopped
// before; its log is shown when the test failed.
func StartFromShell(t testing.TB, bin string, args ...string) *Daemon {
	t.Helper()
	return startForTest(t, bin, nil, args)
}

func startForTest(t testing.TB, bin string, env, args []string) *Daemon {
	t.Helper()
	d, err := launch(bin, env, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Kill()
		if t.Failed() {
			t.Logf("threadcap's log:\n%s", d.Log)
		}
	})
	return d
}

// Launch starts `bin run args...` as from a shell and returns at once, as StartFromShell
// does, but for a caller with no test to fail or clean up after (the benchmark): it stops
// the daemon itself, with Shutdown or Kill.
func Launch(bin string, args ...string) (*Daemon, error) {
	return launch(bin, nil, args)
}

// launch starts `bin run args...` with env added to this process's environment.
func launch(bin string, env, args []string) (*Daemon, error) {
	d := &Daemon{Cmd: exec.Command(bin, append([]string{"run"}, args...)...), Log: &SyncBuffer{}, done: make(chan struct{})}
	d.Cmd.Env = append(os.Environ(), env...)
	d.Cmd.Stdout, d.Cmd.Stderr = d.Log, d.Log
	if err := d.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		d.err = d.Cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// Exited reports whether threadcap has exited.
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Err is how threadcap exited: nil for status 0, and while it runs.
func (d *Daemon) Err() error {
	if !d.Exited() {
		return nil
	}
	return d.err
}

// Kill ends threadcap with SIGKILL, as the OOM killer or a power cut would, and waits for
// it to be gone; once it has exited, it does nothing.
func (d *Daemon) Kill() {
	if !d.Exited() {
		d.Cmd.Process.Kill()
	}
	<-d.done
}

// Signal sends sig (SIGHUP reloads the config), failing the test if threadcap cannot get it.
func (d *Daemon) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := d.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Shutdown sends sig and waits at most patience for threadcap to exit, then kills it, as
// systemd does when a stop times out. It returns how long threadcap took to exit; an error
// says it had exited already or had to be killed. How it exited is Err's.
func (d *Daemon) Shutdown(sig syscall.Signal, patience time.Duration) (time.Duration, error) {
	sent := time.Now()
	if err := d.Cmd.Process.Signal(sig); errors.Is(err, os.ErrProcessDone) {
		<-d.done
		return 0, fmt.Errorf("threadcap exited (%v) before %s", d.err, unix.SignalName(sig))
	} else if err != nil {
		return 0, err
	}
	select {
	case <-d.done:
		return time.Since(sent), nil
	case <-time.After(patience):
		d.Kill()
		return patience, fmt.Errorf("threadcap still running %v after %s; killed it", patience, unix.SignalName(sig))
	}
}

// Stop sends SIGTERM, as systemctl stop does, and fails the test unless threadcap exits 0.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	d.StopWith(t, syscall.SIGTERM)
}

// StopWith is Stop with sig: SIGINT is Ctrl-C in the shell that started it.
func (d *Daemon) StopWith(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if _, err := d.Shutdown(sig, stopPatience); err != nil {
		t.Fatalf("%v\n%s", err, d.Log)
	}
	if err := d.Err(); err != nil {
		t.Fatalf("threadcap run: %v\n%s", err, d.Log)
	}
}

// Notified is the next state threadcap notifies systemd of after READY=1 (STOPPING=1 when
// it stops), waited for at most patience. Only a daemon Start started has someone to tell.
func (d *Daemon) Notified(t testing.TB, patience time.Duration) string {
	t.Helper()
	if d.systemd == nil {
		t.Fatal("threadcap was started without NOTIFY_SOCKET: use Start")
	}
	return Receive(t, d.systemd, patience)
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
