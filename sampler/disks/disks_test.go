// SPDX-License-Identifier: Apache-2.0

package disks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadcap/threadcap/state"
)

func sysWith(t *testing.T, devs map[string]string) string {
	t.Helper()
	sys := t.TempDir()
	for majMin, uevent := range devs {
		dir := filepath.Join(sys, "dev", "block", majMin)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte(uevent), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func TestNames(t *testing.T) {
	sys := sysWith(t, map[string]string{
		"254:0":  "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\nDISKSEQ=1\n",
		"259:3":  "MAJOR=259\nMINOR=3\nDEVNAME=nvme0n1\nDEVTYPE=disk\n",
		"7:1":    "MAJOR=7\nMINOR=1\nDEVTYPE=disk\n",
		"253:12": "MAJOR=253\nMINOR=12\nDEVNAME=dm-12\n",
	})
	n := New(sys)
	for _, tc := range []struct {
		dev  state.Dev
		want string
	}{
		{254 << 20, "vda"},
		{259<<20 | 3, "nvme0n1"},
		{253<<20 | 12, "dm-12"},
		{7<<20 | 1, "7:1"},   // no DEVNAME
		{8<<20 | 16, "8:16"}, // gone
	} {
		if got := n.Name(tc.dev); got != tc.want {
			t.Errorf("Name(%d:%d) = %q, want %q", tc.dev.Major(), tc.dev.Minor(), got, tc.want)
		}
	}
	if !n.Exists(254<<20) || n.Exists(8<<20|16) {
		t.Error("Exists: vda should exist and 8:16 not")
	}
	for majMin, inflight := range map[string]string{"254:0": "       0        0\n", "259:3": "       0        2\n"} {
		if err := os.WriteFile(filepath.Join(sys, "dev", "block", majMin, "inflight"), []byte(inflight), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !n.Idle(254<<20) || n.Idle(259<<20|3) || n.Idle(253<<20|12) {
		t.Error("Idle: vda (0 0) should be idle, nvme0n1 (0 2) busy, dm-12 (no inflight file) not known idle")
	}
	// A removed device keeps its cached name until forgotten; then its number is read again.
	if err := os.RemoveAll(filepath.Join(sys, "dev", "block", "254:0")); err != nil {
		t.Fatal(err)
	}
	if n.Exists(254<<20) || n.Name(254<<20) != "vda" {
		t.Error("a removed device should not exist, and keep its cached name")
	}
	n.Forget(254 << 20)
	if got := n.Name(254 << 20); got != "254:0" {
		t.Errorf("a forgotten, removed device is named %q, want 254:0", got)
	}
}
