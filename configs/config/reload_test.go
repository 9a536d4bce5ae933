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
