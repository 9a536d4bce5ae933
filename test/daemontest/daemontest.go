// SPDX-License-Identifier: Apache-2.0

// Package daemontest holds what the tests that run the threadcap binary share, and the
// benchmark with them: building it, starting and stopping it, collecting its output, and
// playing systemd's end of NOTIFY_SOCKET.
package daemontest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Build compiles threadcap from this repository into dir and returns the binary's path.
func Build(dir string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "threadcap")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/threadcap")
	cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building threadcap: %w\n%s", err, out)
	}
	return bin, nil
}

// SyncBuffer is a bytes.Buffer the daemon's output goroutines and the test share.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ListenNotify is systemd's end of NOTIFY_SOCKET, for a Type=notify service, at path.
func ListenNotify(t testing.TB, path string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Receive is the next state threadcap notifies, waited for at most patience.
func Receive(t testing.TB, conn *net.UnixConn, patience time.Duration) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification for systemd: %v", err)
	}
	return string(buf[:n])
}
