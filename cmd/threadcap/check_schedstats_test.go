// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSchedstats(t *testing.T) {
	for _, tc := range []struct {
		name, value, want, split string
	}{
		{"not built", "", "not in this kernel", "by the state seen at the ticks"},
		{"off", "0\n", "sysctl kernel.sched_schedstats=1 turns them on", "by the state seen at the ticks"},
		{"on", "1\n", "on (kernel.sched_schedstats=1)", "by the kernel's own counts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := t.TempDir()
			if tc.value != "" {
				dir := filepath.Join(proc, "sys/kernel")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "sched_schedstats"), []byte(tc.value), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := checkSchedstats(proc)
			if r.fix != "" || !strings.Contains(r.detail, tc.want) || !strings.Contains(r.detail, tc.split) {
				t.Errorf("schedstats %q: %+v; want a pass saying %q and that the split is made %s", tc.value, r, tc.want, tc.split)
			}
		})
	}
}
