// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPIDNamespace reads the link of a /proc made for the test: the machine's
// namespace passes, another fails with the fix, a missing link fails saying so.
func TestCheckPIDNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, link string
		fails      bool
		says       string
	}{
		{"the machine's", machinePIDNamespace, false, "the machine's"},
		{"its own", "pid:[4026532201]", true, "PID namespace of its own (pid:[4026532201])"},
		{"no /proc", "", true, "which PID namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := t.TempDir()
			if tc.link != "" {
				if err := os.MkdirAll(filepath.Join(proc, "self/ns"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(tc.link, filepath.Join(proc, "self/ns/pid")); err != nil {
					t.Fatal(err)
				}
			}
			r := checkPIDNamespace(proc)
			if (r.fix != "") != tc.fails || !strings.Contains(r.detail, tc.says) {
				t.Errorf("%+v, want failing %v and the detail to say %q", r, tc.fails, tc.says)
			}
			if tc.link != "" && tc.fails && r.fix != pidNamespaceFix {
				t.Errorf("fix %q, want %q", r.fix, pidNamespaceFix)
			}
		})
	}
}
