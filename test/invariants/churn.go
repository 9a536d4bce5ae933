// SPDX-License-Identifier: Apache-2.0

package invariants

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// buildPackages are built from scratch over and over: a compiler, an assembler and a
// linker process per package, two at a time, a few hundred processes a build.
var buildPackages = []string{"net/http", "encoding/json"}

// buildChurn runs `go build -a` of buildPackages, each time into an empty GOCACHE, until
// ctx ends; it kills the build then running, with every process it started. The returned
// function waits for that and says how many builds completed, and why one failed. Build
// errors are a broken Go installation, not a finding: the loop stops at the first.
func buildChurn(ctx context.Context, t testing.TB) func() (int, error) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	base := t.TempDir()
	done := make(chan struct{})
	var builds int
	var failure error
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cache, err := os.MkdirTemp(base, "gocache-")
			if err != nil {
				failure = err
				return
			}
			cmd := exec.CommandContext(ctx, goTool, append([]string{"build", "-a", "-p", "2"}, buildPackages...)...)
			cmd.Dir = base // outside any module
			cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			if cmd.Process != nil {
				// The compilers of a killed build may outlive go itself for a moment.
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			os.RemoveAll(cache)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				failure = fmt.Errorf("go build -a %v: %w\n%s", buildPackages, err, out)
				return
			}
			builds++
		}
	}()
	return func() (int, error) {
		<-done
		return builds, failure
	}
}
