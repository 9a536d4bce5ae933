// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// listenNotify is systemd's end of NOTIFY_SOCKET.
func listenNotify(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	entry := logrus.NewEntry(log)

	path := filepath.Join(t.TempDir(), "notify")
	conn := listenNotify(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	notify(entry, "READY=1")
	if got := receive(t, conn); got != "READY=1" {
		t.Errorf("systemd got %q, want READY=1", got)
	}

	// systemd may also hand out an abstract socket, written with a leading @.
	abstract := listenNotify(t, "\x00threadcap-test-"+filepath.Base(t.TempDir()))
	t.Setenv("NOTIFY_SOCKET", "@"+abstract.LocalAddr().String()[1:])
	notify(entry, "STOPPING=1")
	if got := receive(t, abstract); got != "STOPPING=1" {
		t.Errorf("systemd got %q on the abstract socket, want STOPPING=1", got)
	}
}
