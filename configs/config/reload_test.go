// SPDX-License-Identifier: Apache-2.0

package config

import (
	"slices"
	"testing"
	"time"
)

func TestDiffSaysWhatNeedsARestart(t *testing.T) {
	old := Default()
	next := Default()
	next.Hz = 10
	next.Pids = []int32{42}
	next.Output.MaxAge = Duration(time.Hour)
	next.Log.Level = "debug"
	next.Dir = "/elsewhere"
	next.Capacity = 1024
	next.Output.Group = "adm"
	changed, restart := Diff(&old, &next)
	if want := []string{"hz", "log.level", "output.max_age", "pids"}; !slices.Equal(changed, want) {
		t.Errorf("changed live: %v, want %v", changed, want)
	}
	if want := []string{"capacity", "dir", "output.group"}; !slices.Equal(restart, want) {
		t.Errorf("needs a restart: %v, want %v", restart, want)
	}
	if c, r := Diff(&old, &old); len(c)+len(r) != 0 {
		t.Errorf("a config differs from itself: %v %v", c, r)
	}
}

// TestKeepRestartOnlyKeepsWhatDiffSaysNeedsARestart: the one table drives both, so a
// config differing in every restart-only key, once reset, differs in none of them.
func TestKeepRestartOnlyKeepsWhatDiffSaysNeedsARestart(t *testing.T) {
	old := Default()
	next := Default()
	next.Dir, next.Syscalls, next.Capacity = "/elsewhere", "passive", 1024
	next.Columns = ColumnsConfig{}
	next.Stacks = StacksConfig{Kernel: "off", User: true, Entries: 7}
	next.IO = false
	next.Output.FileMode, next.Output.DirMode, next.Output.Group = 0o600, 0o700, "adm"
	next.Metrics = MetricsConfig{Listen: "127.0.0.1:9465", TopProcesses: 3}
	next.Output.Format, next.Host = "parquet", "db-7"
	next.Ship = ShipConfig{Endpoint: "s3:9000", Bucket: "b", Prefix: "p", Region: "eu", CredentialsFile: "/c", Interval: 1}
	next.Spans = []SpanConfig{{Preset: "postgresql"}}
	next.Profile.Hz = 99
	next.Hz = 10
	_, restart := Diff(&old, &next)
	if len(restart) != len(restartOnly) {
		t.Errorf("needs a restart: %v, want every one of the %d restart-only keys", restart, len(restartOnly))
	}
	next.KeepRestartOnly(&old)
	changed, restart := Diff(&old, &next)
	if len(restart) != 0 || !slices.Equal(changed, []string{"hz"}) {
		t.Errorf("after KeepRestartOnly: changed %v, restart %v; want only hz changed", changed, restart)
	}
	fields := old.Fields()
	for _, r := range restartOnly {
		if _, ok := fields[r.key]; !ok {
			t.Errorf("restart-only key %s is not a key of Fields", r.key)
		}
	}
}
