// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/sampler/procinfo"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// TestReportByContainerAndUnit runs threadcap over a spinner in a CRI-containerd cgroup
// under a kubepods slice the test makes, and expects threadcap report --by
// container,unit,pod_uid to give it its own group, named as kubectl and crictl would.
func TestReportByContainerAndUnit(t *testing.T) {
	privileged.Require(t)
	const (
		id  = "5e6f708192a3b4c5d6e7f8091a2b3c4d3f4e5a6b7c8d9e0f1a2b3c4d5e6f7081"
		uid = "7c0d9e8f-1a2b-4c3d-9e8f-0a1b2c3d4e5f"
	)
	mount := procinfo.Cgroup2Mount("/proc")
	root := filepath.Join(mount, "threadcap-e2e-"+strconv.Itoa(os.Getpid()))
	leaf := filepath.Join(root, "kubepods.slice", "kubepods-burstable.slice",
		"kubepods-burstable-pod"+strings.ReplaceAll(uid, "-", "_")+".slice", "cri-containerd-"+id+".scope")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	spinner := exec.Command("sh", "-c", "while :; do :; done")
	pid := workload.Process(t, spinner)
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(mount, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		for d := leaf; len(d) >= len(root); d = filepath.Dir(d) {
			for range 50 {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	d := start(t, dir, "--hz", "10", "--pid", strconv.Itoa(pid))
	waitFor(t, d, "rows of the spinner with its container", func() bool {
		for _, r := range rowsSoFar(t, dir) {
			if r["container"] == "containerd:5e6f708192a3" {
				return true
			}
		}
		return false
	})
	stop(t, d)

	code, out := exitCode(t, exec.Command(binary, "report", "--dir", dir, "--by", "container,unit,pod_uid", "--format", "csv"))
	if code != 0 {
		t.Fatalf("report exited %d:\n%s", code, out)
	}
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(records) < 2 {
		t.Fatalf("report's CSV: %v\n%s", err, out)
	}
	if h := records[0]; len(h) < 3 || h[0] != "container" || h[1] != "unit" || h[2] != "pod_uid" {
		t.Fatalf("report's header %v, want container,unit,pod_uid first", h)
	}
	want := []string{"containerd:5e6f708192a3", "cri-containerd-" + id + ".scope", uid}
	for _, rec := range records[1:] {
		if rec[0] == want[0] && rec[1] == want[1] && rec[2] == want[2] {
			return
		}
	}
	t.Errorf("no group %v in report --by container,unit,pod_uid:\n%s", want, out)
}
