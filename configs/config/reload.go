// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"sort"
)

// restartOnly are the settings a running threadcap cannot change: the kernel side is sized
// and loaded with them, the directory is held with them, or the metrics endpoint listens
// and labels with them. This table is the one place
// that says so: Diff reads its keys, KeepRestartOnly its resets.
var restartOnly = []struct {
	key  string
	keep func(next, running *Config)
}{
	{"dir", func(n, r *Config) { n.Dir = r.Dir }},
	{"syscalls", func(n, r *Config) { n.Syscalls = r.Syscalls }},
	{"capacity", func(n, r *Config) { n.Capacity = r.Capacity }},
	{"columns.cgroup", func(n, r *Config) { n.Columns.Cgroup = r.Columns.Cgroup }},
	{"columns.fd_target", func(n, r *Config) { n.Columns.FdTarget = r.Columns.FdTarget }},
	{"stacks.kernel", func(n, r *Config) { n.Stacks.Kernel = r.Stacks.Kernel }},
	{"stacks.user", func(n, r *Config) { n.Stacks.User = r.Stacks.User }},
	{"stacks.entries", func(n, r *Config) { n.Stacks.Entries = r.Stacks.Entries }},
	{"io", func(n, r *Config) { n.IO = r.IO }},
	{"output.file_mode", func(n, r *Config) { n.Output.FileMode = r.Output.FileMode }},
	{"output.dir_mode", func(n, r *Config) { n.Output.DirMode = r.Output.DirMode }},
	{"output.group", func(n, r *Config) { n.Output.Group = r.Output.Group }},
	{"metrics.listen", func(n, r *Config) { n.Metrics.Listen = r.Metrics.Listen }},
	{"metrics.top_processes", func(n, r *Config) { n.Metrics.TopProcesses = r.Metrics.TopProcesses }},
	{"output.format", func(n, r *Config) { n.Output.Format = r.Output.Format }},
	{"host", func(n, r *Config) { n.Host = r.Host }},
	{"ship.endpoint", func(n, r *Config) { n.Ship.Endpoint = r.Ship.Endpoint }},
	{"ship.bucket", func(n, r *Config) { n.Ship.Bucket = r.Ship.Bucket }},
	{"ship.prefix", func(n, r *Config) { n.Ship.Prefix = r.Ship.Prefix }},
	{"ship.region", func(n, r *Config) { n.Ship.Region = r.Ship.Region }},
	{"ship.tls", func(n, r *Config) { n.Ship.TLS = r.Ship.TLS }},
	{"ship.credentials_file", func(n, r *Config) { n.Ship.CredentialsFile = r.Ship.CredentialsFile }},
	{"ship.interval", func(n, r *Config) { n.Ship.Interval = r.Ship.Interval }},
	{"spans", func(n, r *Config) { n.Spans = r.Spans }},
	{"profile.hz", func(n, r *Config) { n.Profile.Hz = r.Profile.Hz }},
}

// needsRestart says whether key is one of restartOnly.
func needsRestart(key string) bool {
	for _, r := range restartOnly {
		if r.key == key {
			return true
		}
	}
	return false
}

// KeepRestartOnly sets, in c, every setting that needs a restart back to its value in
// running: until the restart, what runs is what is reported.
func (c *Config) KeepRestartOnly(running *Config) {
	for _, r := range restartOnly {
		r.keep(c, running)
	}
}

// Diff lists the keys whose values differ between old and next: those applied live, and
// those that need a restart.
func Diff(old, next *Config) (changed, restart []string) {
	a, b := old.Fields(), next.Fields()
	for key, v := range a {
		if fmt.Sprint(v) == fmt.Sprint(b[key]) {
			continue
		}
		if needsRestart(key) {
			restart = append(restart, key)
		} else {
			changed = append(changed, key)
		}
	}
	sort.Strings(changed)
	sort.Strings(restart)
	return changed, restart
}
