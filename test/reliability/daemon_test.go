// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// startDaemon runs threadcap with args, as from a shell, killed when the test ends.
func startDaemon(t *testing.T, args ...string) *daemontest.Daemon {
	t.Helper()
	privileged.Require(t)
	bin, err := daemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	return daemontest.StartFromShell(t, bin, args...)
}

// waitLog waits up to a minute (threadcap seeds from /proc first, which on a busy machine
// takes a while) for a log line containing part.
func waitLog(t *testing.T, d *daemontest.Daemon, part string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(d.Log.String(), part) {
			return
		}
		if d.Exited() {
			t.Fatalf("threadcap is no longer running: %v\n%s", d.Err(), d.Log)
		}
	}
	t.Fatalf("threadcap never logged %q:\n%s", part, d.Log)
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
