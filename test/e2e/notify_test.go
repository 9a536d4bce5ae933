// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"net"
	"testing"
	"time"
)

// listenNotify is systemd's end of NOTIFY_SOCKET, for a Type=notify service.
func listenNotify(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// receive is the next state threadcap notifies.
func receive(t *testing.T, conn *net.UnixConn) string {
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
