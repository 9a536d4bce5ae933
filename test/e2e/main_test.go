// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the real threadcap binary, built once for all tests, as operators do:
// it starts it, watches the files it writes, signals it, and checks what it leaves.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// binary is threadcap, built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "threadcap-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := build(dir)
	if code == 0 {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) int {
	// Others than root run it too (the capability tests): the directory must let them.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	binary = filepath.Join(dir, "threadcap")
	cmd := exec.Command(goTool, "build", "-o", binary, "github.com/threadcap/threadcap/cmd/threadcap")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building threadcap:", err)
		return 1
	}
	return 0
}
