// SPDX-License-Identifier: Apache-2.0

package daemontest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Shutdown, on stand-ins for threadcap that take `run` as their first argument and
// ignore it: the exit a test waits for, the hang a stop timeout ends, the crash before.
func TestShutdown(t *testing.T) {
	const patience = 300 * time.Millisecond
	for _, tc := range []struct {
		name, script string
		exitFirst    bool   // wait for it to exit by itself before Shutdown
		wantErr      string // in Shutdown's error; none if empty
		wantExit     string // Err after; nil if empty
	}{
		// The sleep's output goes elsewhere so that it holds no pipe of the launcher's.
		{"exits 0 on SIGTERM", "trap 'kill $!; exit 0' TERM; echo ready; sleep 60 >/dev/null 2>&1 & wait", false, "", ""},
		// SIGTERM stays ignored across exec, and SIGKILL leaves no child behind.
		{"ignores SIGTERM", "trap '' TERM; echo ready; exec sleep 60", false, "threadcap still running 300ms after SIGTERM; killed it", "signal: killed"},
		{"exited before", "exit 3", true, "threadcap exited (exit status 3) before SIGTERM", "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "threadcap")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := Launch(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Kill()
			// Until it has exited by itself, or set its trap and said so.
			waited := func() bool { return d.Exited() || !tc.exitFirst && strings.Contains(d.Log.String(), "ready") }
			for deadline := time.Now().Add(10 * time.Second); !waited(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the stand-in neither exited nor said it was ready:\n%s", d.Log)
				}
			}
			took, err := d.Shutdown(syscall.SIGTERM, patience)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Shutdown: %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Shutdown: %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && took >= patience {
				t.Errorf("Shutdown took %v, the whole patience", took)
			}
			if !d.Exited() {
				t.Fatal("running after Shutdown")
			}
			if got := d.Err(); (got == nil) != (tc.wantExit == "") || got != nil && got.Error() != tc.wantExit {
				t.Errorf("Err after Shutdown: %v, want %q", got, tc.wantExit)
			}
		})
	}
}
