// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// A spinner in this process gets rows while it spins; SIGTERM leaves complete, valid
// files and nothing of threadcap in the kernel.
func TestRunRecordsAWorkloadAndStopsCleanly(t *testing.T) {
	privileged.Require(t)
	spinner := workload.Spinner(t)
	tid := strconv.Itoa(spinner.Tid)
	dir := t.TempDir()
	// Ready means attached, the directory held and the threads seeded: rows follow.
	d := daemontest.Start(t, binary, patience, "--config", "", "--dir", dir, "--hz", "10")

	spinning := func(r row) bool {
		return r["tid"] == tid && r["pid"] == strconv.Itoa(os.Getpid()) &&
			(r["state"] == "on_cpu" || r["state"] == "runnable") && r["on_cpu_us"] != "" && r["on_cpu_us"] != "0"
	}
	waitFor(t, d, "row of the spinner on CPU", func() bool {
		for _, r := range rowsSoFar(t, dir) {
			if spinning(r) {
				return true
			}
		}
		return false
	})
	objs := heldBy(t, d.Cmd.Process.Pid)
	if len(objs.progs) == 0 || len(objs.links) == 0 {
		t.Fatalf("threadcap holds %d programs and %d links: the fdinfo reading is broken", len(objs.progs), len(objs.links))
	}
	if loaded := stillLoaded(t, objs); len(loaded) != len(objs.progs)+len(objs.links) {
		t.Fatalf("while threadcap runs, only %v of its %d objects are found by id", loaded, len(objs.progs)+len(objs.links))
	}
	before := len(rowsSoFar(t, dir))

	stop(t, d)
	if got := d.Notified(t, patience); got != "STOPPING=1" {
		t.Errorf("systemd got %q at SIGTERM, want STOPPING=1", got)
	}
	rows := validRows(t, dir)
	if len(rows) < before {
		t.Errorf("%d rows after exit, fewer than the %d seen while running", len(rows), before)
	}
	var spun int
	for _, r := range rows {
		if r["pid"] == strconv.Itoa(d.Cmd.Process.Pid) {
			t.Errorf("a row of threadcap itself: %v", r)
		}
		if spinning(r) {
			spun++
		}
	}
	if spun == 0 {
		t.Error("no row of the spinner on CPU in the files")
	}
	requireDetached(t, objs)
	if !strings.Contains(d.Log.String(), "msg=stopped") {
		t.Errorf("no stopped line in the log:\n%s", d.Log.String())
	}
}

func TestSecondInstanceOnTheSameDirIsRefused(t *testing.T) {
	privileged.Require(t)
	dir := t.TempDir()
	first := start(t, dir)
	waitFor(t, first, "hour file", func() bool { return len(hourFiles(t, dir)) > 0 })

	code, out := exitCode(t, exec.Command(binary, "run", "--config", "", "--dir", dir))
	want := fmt.Sprintf("%s is in use by another threadcap (pid %d)", dir, first.Cmd.Process.Pid)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("second instance: exit %d, output\n%s\nwant exit 1 and %q", code, out, want)
	}
	if first.Exited() {
		t.Errorf("the first instance exited: %v", first.Err())
	}
	stop(t, first)
}

// Mistakes in the config stop threadcap before it loads anything, with exit code 2 and
// every mistake named; no root needed.
func TestBadConfigExitsTwoNamingEachKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	yaml := "hz: 500\noutput:\n  compres: gzip\n  max_age: forever\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := exitCode(t, exec.Command(binary, "run", "--config", path, "--dir", t.TempDir(), "--syscalls", "some"))
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	for _, want := range []string{
		"threadcap: 4 mistakes:",
		path + ":1: hz: 500 is out of range",
		path + ":3: output.compres: unknown key: use one of compress,",
		path + ":4: output.max_age: \"forever\" is not a duration",
		"--syscalls (syscalls): \"some\" is not a mode: use full, passive or tick",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
