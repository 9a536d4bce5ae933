// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"strconv"
	"strings"
)

// Workload is whose a thread is, as its cgroup v2 path tells: the container, the
// Kubernetes pod and the systemd unit it runs in. Each is "" when the path does not say.
type Workload struct {
	// Container is the runtime and the container's short id ("docker:3f4e5a6b7c8d", 12 hex
	// digits as docker ps shows), or its name for runtimes that name containers
	// ("nspawn:web", "lxc:db1").
	Container string
	// PodUID is the Kubernetes pod's UID, with dashes, as kubectl shows it.
	PodUID string
	// Unit is the innermost systemd unit or scope, such as mysql.service or session-3.scope.
	Unit string
}

// containerScheme is how one runtime names a container's cgroup: a path component that
// starts with prefix, optionally ends with suffix (the systemd cgroup driver adds
// ".scope", the cgroupfs driver does not), with the container's id or name between.
type containerScheme struct {
	runtime        string
	prefix, suffix string
	named          bool // the middle is a name (systemd-escaped), not a 64-hex id
}

// containerSchemes are the runtimes' naming schemes, one line each. A scheme whose prefix
// a longer one extends comes after it (crio-conmon- is conmon, not a container: its middle
// is no id).
var containerSchemes = []containerScheme{
	{runtime: "docker", prefix: "docker-", suffix: ".scope"},                        // /system.slice/docker-<id>.scope
	{runtime: "containerd", prefix: "cri-containerd-", suffix: ".scope"},            // kubepods, systemd driver
	{runtime: "crio", prefix: "crio-", suffix: ".scope"},                            // kubepods, CRI-O
	{runtime: "podman", prefix: "libpod-", suffix: ".scope"},                        // machine.slice/libpod-<id>.scope
	{runtime: "nspawn", prefix: "machine-", suffix: ".scope", named: true},          // machine.slice/machine-<name>.scope
	{runtime: "nspawn", prefix: "systemd-nspawn@", suffix: ".service", named: true}, // nspawn as a service
	{runtime: "lxc", prefix: "lxc.payload.", named: true},                           // LXC 4+: /lxc.payload.<name>
}

// bareIDParents are the components under which a bare 64-hex component is a container of
// a runtime with the cgroupfs driver: /docker/<id>, /lxc/<name> and so on.
var bareIDParents = map[string]string{"docker": "docker", "libpod_parent": "podman"}

// shortID is how many hex digits of a container id are shown, as docker ps does.
const shortID = 12

// unitSuffixes are the systemd unit types that have cgroups of their own; slices only
// group them.
var unitSuffixes = []string{".service", ".scope", ".socket", ".mount", ".swap"}

// ParseCgroup tells whose a cgroup v2 path is. The innermost container wins (a docker
// container inside a systemd-nspawn machine is the docker one), as does the innermost
// unit (a service inside a machine is the machine's own).
func ParseCgroup(path string) Workload {
	var w Workload
	var parent string
	underKubepods := false
	for comp := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		if comp == "" {
			continue
		}
		if c, ok := containerOf(comp, parent); ok {
			w.Container = c
		} else if underKubepods && isHexID(comp) {
			// /kubepods/burstable/pod<uid>/<id>: the cgroupfs driver does not name
			// the runtime.
			w.Container = "cri:" + comp[:shortID]
		}
		if uid, ok := podUID(comp); ok && (underKubepods || strings.HasPrefix(comp, "kubepods")) {
			w.PodUID = uid
		}
		if comp == "kubepods" || strings.HasPrefix(comp, "kubepods-") || strings.HasPrefix(comp, "kubepods.") {
			underKubepods = true
		}
		if unitName(comp) {
			w.Unit = comp
		}
		parent = comp
	}
	return w
}

// containerOf names the container cgroup component comp (under parent) is, if any.
func containerOf(comp, parent string) (string, bool) {
	if rt, ok := bareIDParents[parent]; ok && isHexID(comp) {
		return rt + ":" + comp[:shortID], true
	}
	if parent == "lxc" || parent == "lxc.payload" {
		return "lxc:" + comp, true // LXC before 4: /lxc/<name>
	}
	for _, s := range containerSchemes {
		mid, ok := strings.CutPrefix(comp, s.prefix)
		if !ok {
			continue
		}
		if s.suffix != "" {
			mid = strings.TrimSuffix(mid, s.suffix)
		}
		if s.named {
			if mid == "" {
				continue
			}
			return s.runtime + ":" + systemdUnescape(mid), true
		}
		if isHexID(mid) {
			return s.runtime + ":" + mid[:shortID], true
		}
	}
	return "", false
}

// isHexID says whether s is a container id: 64 lowercase hex digits.
func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// podUID reads the pod UID of a kubepods component: kubepods-burstable-pod<uid>.slice
// (systemd driver, the UID's dashes written as underscores, which systemd reserves) or
// pod<uid> (cgroupfs driver). A static pod's UID is 32 hex digits without dashes.
func podUID(comp string) (string, bool) {
	i := strings.LastIndex(comp, "pod")
	if i < 0 || (i > 0 && comp[i-1] != '-') {
		return "", false
	}
	uid := strings.TrimSuffix(comp[i+3:], ".slice")
	uid = strings.ReplaceAll(uid, "_", "-")
	if len(uid) != 36 && len(uid) != 32 {
		return "", false
	}
	for j := range len(uid) {
		if c := uid[j]; !isHex(c) && !(c == '-' && len(uid) == 36 && (j == 8 || j == 13 || j == 18 || j == 23)) {
			return "", false
		}
	}
	return uid, true
}

// unitName says whether cgroup component comp is a systemd unit with a cgroup of its own.
func unitName(comp string) bool {
	for _, s := range unitSuffixes {
		if len(comp) > len(s) && strings.HasSuffix(comp, s) {
			return true
		}
	}
	return false
}

// systemdUnescape undoes systemd's escaping of a name in a unit name: \x2d is '-'.
func systemdUnescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Workloads caches ParseCgroup by path: a machine has few cgroups, and every row of one
// asks again at every tick.
type Workloads struct {
	byPath map[string]Workload
}

// maxWorkloads bounds the cache; past it, it starts again empty, which only costs parses.
const maxWorkloads = 4096

// NewWorkloads makes an empty cache.
func NewWorkloads() *Workloads { return &Workloads{byPath: map[string]Workload{}} }

// Of is ParseCgroup(path), parsed once per path.
func (c *Workloads) Of(path string) Workload {
	if path == "" {
		return Workload{}
	}
	if w, ok := c.byPath[path]; ok {
		return w
	}
	if len(c.byPath) >= maxWorkloads {
		clear(c.byPath)
	}
	w := ParseCgroup(path)
	c.byPath[path] = w
	return w
}
