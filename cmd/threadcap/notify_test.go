// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/test/daemontest"
)

func TestNotify(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	entry := logrus.NewEntry(log)

	path := filepath.Join(t.TempDir(), "notify")
	conn := daemontest.ListenNotify(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	notify(entry, "READY=1")
	if got := daemontest.Receive(t, conn, 10*time.Second); got != "READY=1" {
		t.Errorf("systemd got %q, want READY=1", got)
	}

	// systemd may also hand out an abstract socket, written with a leading @.
	abstract := daemontest.ListenNotify(t, "\x00threadcap-test-"+filepath.Base(t.TempDir()))
	t.Setenv("NOTIFY_SOCKET", "@"+abstract.LocalAddr().String()[1:])
	notify(entry, "STOPPING=1")
	if got := daemontest.Receive(t, abstract, 10*time.Second); got != "STOPPING=1" {
		t.Errorf("systemd got %q on the abstract socket, want STOPPING=1", got)
	}
}
