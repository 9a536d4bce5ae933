// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"slices"
	"sort"
)

// restartKeys are the settings a running threadcap cannot change: the kernel side is
// sized and loaded with them, or the directory is held with them.
var restartKeys = []string{"dir", "syscalls", "capacity", "columns.cgroup", "columns.fd_target",
	"stacks.kernel", "stacks.user", "stacks.entries", "output.file_mode", "output.dir_mode", "output.group"}

// Diff lists the keys whose values differ between old and next: those applied live, and
// those that need a restart.
func Diff(old, next *Config) (changed, restart []string) {
	a, b := old.Fields(), next.Fields()
	for key, v := range a {
		if fmt.Sprint(v) == fmt.Sprint(b[key]) {
			continue
		}
		if slices.Contains(restartKeys, key) {
			restart = append(restart, key)
		} else {
			changed = append(changed, key)
		}
	}
	sort.Strings(changed)
	sort.Strings(restart)
	return changed, restart
}
