// SPDX-License-Identifier: Apache-2.0

package procinfo

import "testing"

const (
	dockerID = "3f4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
	podDash  = "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"
	podUnder = "1f2e3d4c_5b6a_4798_8a7b_6c5d4e3f2a1b"
)

func TestParseCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		want       Workload
	}{
		{"root", "/", Workload{}},
		{"empty", "", Workload{}},
		{"service", "/system.slice/mysql.service", Workload{Unit: "mysql.service"}},
		{"session", "/user.slice/user-1000.slice/session-3.scope", Workload{Unit: "session-3.scope"}},
		{"user service", "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-42.scope",
			Workload{Unit: "app-gnome-firefox-42.scope"}},
		{"slice only", "/system.slice", Workload{}},
		{"docker systemd", "/system.slice/docker-" + dockerID + ".scope",
			Workload{Container: "docker:3f4e5a6b7c8d", Unit: "docker-" + dockerID + ".scope"}},
		{"docker cgroupfs", "/docker/" + dockerID, Workload{Container: "docker:3f4e5a6b7c8d"}},
		{"docker inner unit", "/system.slice/docker-" + dockerID + ".scope/init.scope",
			Workload{Container: "docker:3f4e5a6b7c8d", Unit: "init.scope"}},
		{"containerd kubepods", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnder +
			".slice/cri-containerd-" + dockerID + ".scope",
			Workload{Container: "containerd:3f4e5a6b7c8d", PodUID: podDash, Unit: "cri-containerd-" + dockerID + ".scope"}},
		{"guaranteed pod", "/kubepods.slice/kubepods-pod" + podUnder + ".slice/cri-containerd-" + dockerID + ".scope",
			Workload{Container: "containerd:3f4e5a6b7c8d", PodUID: podDash, Unit: "cri-containerd-" + dockerID + ".scope"}},
		{"pod sandbox level", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUnder + ".slice",
			Workload{PodUID: podDash}},
		{"kubepods cgroupfs", "/kubepods/burstable/pod" + podDash + "/" + dockerID,
			Workload{Container: "cri:3f4e5a6b7c8d", PodUID: podDash}},
		{"static pod", "/kubepods/besteffort/pod0123456789abcdef0123456789abcdef/" + dockerID,
			Workload{Container: "cri:3f4e5a6b7c8d", PodUID: "0123456789abcdef0123456789abcdef"}},
		{"crio", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnder + ".slice/crio-" + dockerID + ".scope",
			Workload{Container: "crio:3f4e5a6b7c8d", PodUID: podDash, Unit: "crio-" + dockerID + ".scope"}},
		{"crio conmon is no container", "/kubepods.slice/kubepods-pod" + podUnder + ".slice/crio-conmon-" + dockerID + ".scope",
			Workload{PodUID: podDash, Unit: "crio-conmon-" + dockerID + ".scope"}},
		{"crio cgroupfs", "/kubepods/pod" + podDash + "/crio-" + dockerID,
			Workload{Container: "crio:3f4e5a6b7c8d", PodUID: podDash}},
		{"podman", "/machine.slice/libpod-" + dockerID + ".scope/container",
			Workload{Container: "podman:3f4e5a6b7c8d", Unit: "libpod-" + dockerID + ".scope"}},
		{"podman conmon", "/machine.slice/libpod-conmon-" + dockerID + ".scope",
			Workload{Unit: "libpod-conmon-" + dockerID + ".scope"}},
		{"podman cgroupfs", "/libpod_parent/libpod-" + dockerID, Workload{Container: "podman:3f4e5a6b7c8d"}},
		{"nspawn machine", `/machine.slice/machine-web\x2d1.scope/payload/system.slice/nginx.service`,
			Workload{Container: "nspawn:web-1", Unit: "nginx.service"}},
		{"nspawn machine itself", `/machine.slice/machine-web.scope`,
			Workload{Container: "nspawn:web", Unit: "machine-web.scope"}},
		{"nspawn service", "/machine.slice/systemd-nspawn@db.service/payload",
			Workload{Container: "nspawn:db", Unit: "systemd-nspawn@db.service"}},
		{"lxc", "/lxc.payload.db1/system.slice/postgresql.service", Workload{Container: "lxc:db1", Unit: "postgresql.service"}},
		{"lxc monitor", "/lxc.monitor.db1", Workload{}},
		{"lxc legacy", "/lxc/db1", Workload{Container: "lxc:db1"}},
		{"short id is no container", "/system.slice/docker-3f4e.scope", Workload{Unit: "docker-3f4e.scope"}},
		{"uppercase id is no container", "/docker/" + "3F4E5A6B7C8D9E0F1A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F7081", Workload{}},
		{"bare id elsewhere", "/system.slice/containerd.service/" + dockerID, Workload{Unit: "containerd.service"}},
		{"pod outside kubepods", "/pod" + podDash, Workload{}},
		{"hostile lxc name", "/lxc.payload.=x,\"y\x1b[31m", Workload{Container: "lxc:=x,\"y\x1b[31m"}},
		{"hostile unit", "/system.slice/=cmd|x\x07.service", Workload{Unit: "=cmd|x\x07.service"}},
		{"hostile escape", `/machine.slice/machine-\x1b\x2c\x.scope`, Workload{Container: "nspawn:\x1b,\\x", Unit: `machine-\x1b\x2c\x.scope`}},
	} {
		if got := ParseCgroup(tc.path); got != tc.want {
			t.Errorf("%s: ParseCgroup(%q) = %+v, want %+v", tc.name, tc.path, got, tc.want)
		}
	}
}

func TestWorkloadsCachesAndBounds(t *testing.T) {
	c := NewWorkloads()
	path := "/system.slice/docker-" + dockerID + ".scope"
	if got := c.Of(path); got.Container != "docker:3f4e5a6b7c8d" {
		t.Fatalf("Of(%q) = %+v", path, got)
	}
	for i := range maxWorkloads + 10 {
		c.Of("/system.slice/s" + string(rune('a'+i%26)) + string(rune(i)) + ".service")
	}
	if len(c.byPath) > maxWorkloads {
		t.Errorf("cache holds %d paths, more than %d", len(c.byPath), maxWorkloads)
	}
	if got := c.Of(""); got != (Workload{}) {
		t.Errorf("Of(\"\") = %+v", got)
	}
}

func FuzzParseCgroup(f *testing.F) {
	f.Add("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnder + ".slice/cri-containerd-" + dockerID + ".scope")
	f.Add(`/machine.slice/machine-a\x2.scope`)
	f.Fuzz(func(t *testing.T, path string) {
		w := ParseCgroup(path)
		if w.PodUID != "" && len(w.PodUID) != 36 && len(w.PodUID) != 32 {
			t.Errorf("pod uid %q", w.PodUID)
		}
	})
}
