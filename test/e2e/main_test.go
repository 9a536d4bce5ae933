// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the real threadcap binary, built once for all tests, as operators do:
// it starts it, watches the files it writes, signals it, and checks what it leaves.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/threadcap/threadcap/test/daemontest"
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
	err := os.Chmod(dir, 0o755)
	if err == nil {
		binary, err = daemontest.Build(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
