// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionNamesTheBuild: a released build says its version; a build of a checkout
// without one says which commit, of when, and whether the tree had changes.
func TestVersionNamesTheBuild(t *testing.T) {
	const rev = "3cc406e1d2f34a5b6c7d8e9f0a1b2c3d4e5f6a7b"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-compiler", Value: "gc"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-21T14:03:07Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name, version string
		settings      []debug.BuildSetting
		want          string
	}{
		{"tagged", "v1.2.3", vcs("false"), "v1.2.3"},
		{"pseudo-version of a changed tree", "v0.0.0-20261121140307-3cc406e1d2f3+dirty", vcs("true"),
			"v0.0.0-20261121140307-3cc406e1d2f3+dirty"},
		{"devel", "(devel)", vcs("false"), "(devel) revision " + rev + " of 2026-11-21T14:03:07Z"},
		{"devel, changed", "(devel)", vcs("true"), "(devel) revision " + rev + " of 2026-11-21T14:03:07Z, with uncommitted changes"},
		{"devel without vcs", "(devel)", nil, "(devel), built without version control information"},
		{"test binary", "", vcs("false"), "(devel) revision " + rev + " of 2026-11-21T14:03:07Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/threadcap/threadcap", Version: tc.version}, Settings: tc.settings}
			if got := versionOf(info); got != tc.want {
				t.Errorf("version %q, want %q", got, tc.want)
			}
		})
	}
}
