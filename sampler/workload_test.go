// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestContainerPodAndUnitFromCgroups puts a process into each of the cgroup paths the
// runtimes make (docker's, containerd's under kubepods with the systemd driver, the
// cgroupfs driver's kubepods path, a systemd-nspawn machine's with a service inside,
// podman's, and hostile names), under a test cgroup of its own, and
// expects the rows to name the container, pod and unit; the hostile names come out of
// the CSV as any text column does, guarded and with control pictures.
func TestContainerPodAndUnitFromCgroups(t *testing.T) {
	privileged.Require(t)
	const (
		id      = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9"
		podDash = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"
		podUnd  = "0b1c2d3e_4f50_4617_8293_a4b5c6d7e8f9"
	)
	mount := procinfo.Cgroup2Mount("/proc")
	root := "/threadcap-test-workload-" + strconv.Itoa(os.Getpid())
	cases := []struct {
		path string
		want procinfo.Workload
		csv  map[string]string // the row's fields as a CSV reader gives them back
	}{
		{path: root + "/system.slice/docker-" + id + ".scope",
			want: procinfo.Workload{Container: "docker:9a8b7c6d5e4f", Unit: "docker-" + id + ".scope"}},
		{path: root + "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/cri-containerd-" + id + ".scope",
			want: procinfo.Workload{Container: "containerd:9a8b7c6d5e4f", PodUID: podDash, Unit: "cri-containerd-" + id + ".scope"}},
		{path: root + "/kubepods/besteffort/pod" + podDash + "/" + id,
			want: procinfo.Workload{Container: "cri:9a8b7c6d5e4f", PodUID: podDash}},
		{path: root + "/machine.slice/machine-web\\x2d1.scope/payload/system.slice/nginx.service",
			want: procinfo.Workload{Container: "nspawn:web-1", Unit: "nginx.service"}},
		{path: root + "/machine.slice/libpod-" + id + ".scope/container",
			want: procinfo.Workload{Container: "podman:9a8b7c6d5e4f", Unit: "libpod-" + id + ".scope"}},
		{path: root + "/lxc.payload.x,\"y\x1b[31m",
			want: procinfo.Workload{Container: "lxc:x,\"y\x1b[31m"},
			csv:  map[string]string{"container": "lxc:x,\"y␛[31m"}},
		{path: root + "/=evil\x07.service",
			want: procinfo.Workload{Unit: "=evil\x07.service"},
			csv:  map[string]string{"unit": "'=evil␇.service"}},
	}
	var pids []int32
	for _, c := range cases {
		pid := workload.Process(t, exec.Command("sh", "-c", "while :; do sleep 0.01; done"))
		pids = append(pids, int32(pid))
		intoCgroup(t, mount, root, c.path, pid)
	}
	s, rec := start(t, sampler.Filter{All: true, Pids: pids}, 100*time.Millisecond)
	var rows map[int32]state.Sample
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		if err := s.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		rows = rec.ticks[len(rec.ticks)-1].rows
	}
	for i, c := range cases {
		row, ok := rows[pids[i]]
		if !ok {
			t.Errorf("no row of process %d in %q", pids[i], c.path)
			continue
		}
		if got := (procinfo.Workload{Container: row.Container, PodUID: row.PodUID, Unit: row.Unit}); got != c.want || row.Cgroup != c.path {
			t.Errorf("process in %q: cgroup %q, %+v, want %+v", c.path, row.Cgroup, got, c.want)
		}
		fields := csvFields(t, row)
		for name, want := range c.csv {
			if fields[name] != want {
				t.Errorf("process in %q: CSV %s %q, want %q", c.path, name, fields[name], want)
			}
		}
	}
}

// intoCgroup makes cgroup path (under root, which goes at the end of the test) and moves
// pid into it.
func intoCgroup(t *testing.T, mount, root, path string, pid int) {
	t.Helper()
	dir := filepath.Join(mount, path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup %q: %v", path, err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(mount, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		// The leaf empties once the children the shell forked there exit; its parents
		// go as soon as no other case's cgroup is under them (the last cleanup removes root).
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for d := filepath.Dir(dir); len(d) >= len(filepath.Join(mount, root)); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("moving process %d into %q: %v", pid, path, err)
	}
}

// csvFields is row as written to a file and read back by a CSV reader, by column name.
func csvFields(t *testing.T, row state.Sample) map[string]string {
	t.Helper()
	rec, err := csv.NewReader(bytes.NewReader(schema.AppendCSV(nil, &row))).Read()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for i, c := range schema.Columns {
		fields[c.Name] = rec[i]
	}
	return fields
}
