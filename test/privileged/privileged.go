// SPDX-License-Identifier: Apache-2.0

// Package privileged gates tests that need root: they skip elsewhere, but under CI=true,
// where CI runs as root on purpose, a skip would hide a failure, so it fails instead.
package privileged

import (
	"os"
	"testing"
)

// Require skips t unless the process runs as root, and fails it when CI=true.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI=true: CI must run privileged tests as root")
	}
	t.Skip("needs root (loads BPF programs)")
}
