// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
)

// TestCmdlineRefreshed: a process that rewrites its command line (as PostgreSQL's
// backends do) shows the new one once the old is CmdlineRefresh old, not before; a long
// one is cut on a character boundary.
func TestCmdlineRefreshed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("postgres: app shop 127.0.0.1(5432) idle\x00\x00")
	procs, err := NewProcesses(root)
	if err != nil {
		t.Fatal(err)
	}
	th := &state.Thread{Tid: 42, Pid: 42}
	t0 := time.Unix(1000, 0)
	if got := procs.Get(th, t0).Cmdline; got != "postgres: app shop 127.0.0.1(5432) idle" {
		t.Errorf("cmdline %q", got)
	}
	write("postgres: app shop 127.0.0.1(5432) SELECT\x00")
	if got := procs.Get(th, t0.Add(time.Second)).Cmdline; !strings.HasSuffix(got, "idle") {
		t.Errorf("cmdline %q read again after 1 s, want the cached one", got)
	}
	if got := procs.Get(th, t0.Add(CmdlineRefresh)).Cmdline; !strings.HasSuffix(got, "SELECT") {
		t.Errorf("cmdline %q after %v, want the new one", got, CmdlineRefresh)
	}
	write("/bin/x\x00" + strings.Repeat("é", MaxCmdline))
	got := procs.Get(th, t0.Add(2*CmdlineRefresh)).Cmdline
	if len(got) > MaxCmdline || !strings.HasPrefix(got, "/bin/x é") || !strings.HasSuffix(got, "é") {
		t.Errorf("long cmdline cut to %d bytes: %q", len(got), got)
	}
}
