// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// Capability numbers (linux/capability.h).
const (
	capPerfmon = 38
	capBPF     = 39
)

// asNobody runs cmd as the unprivileged user nobody, with the given ambient capabilities.
func asNobody(cmd *exec.Cmd, caps ...uintptr) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
		AmbientCaps: caps,
	}
	return cmd
}

// checkLine is one check's result line; a fix line follows each FAIL line.
var checkLine = regexp.MustCompile(`(?m)^(OK|FAIL)\s+(kernel|BTF|features|capabilities|pid namespace|bpf programs|data dir|free space)\s`)

func checkResults(t *testing.T, out string) map[string]string {
	t.Helper()
	results := map[string]string{}
	for _, m := range checkLine.FindAllStringSubmatch(out, -1) {
		results[m[2]] = m[1]
	}
	if len(results) != 8 {
		t.Errorf("%d check lines, want 8:\n%s", len(results), out)
	}
	return results
}

func TestCheckAsRootPasses(t *testing.T) {
	privileged.Require(t)
	code, out := exitCode(t, exec.Command(binary, "check", "--config", "", "--dir", filepath.Join(t.TempDir(), "data")))
	for name, result := range checkResults(t, out) {
		if result != "OK" {
			t.Errorf("%s: %s", name, result)
		}
	}
	if code != 0 || !strings.Contains(out, "will be created") {
		t.Errorf("exit %d, output:\n%s\nwant 0 and the data dir to be created", code, out)
	}
}

// Without capabilities, check says which are missing and how to grant them, and run
// refuses to start naming them; with exactly CAP_BPF and CAP_PERFMON, as the systemd unit
// grants, the programs load.
func TestCapabilities(t *testing.T) {
	privileged.Require(t)
	dir := filepath.Join(sharedDir(t), "data")

	code, out := exitCode(t, asNobody(exec.Command(binary, "check", "--config", "", "--dir", dir)))
	results := checkResults(t, out)
	if code != 1 || results["capabilities"] != "FAIL" || results["bpf programs"] != "FAIL" || results["data dir"] != "OK" {
		t.Errorf("check as nobody: exit %d, %v; want exit 1, capabilities and programs failing:\n%s", code, results, out)
	}
	for _, want := range []string{"missing CAP_BPF and CAP_PERFMON", "fix: run threadcap as root, or grant it CAP_BPF, CAP_PERFMON"} {
		if !strings.Contains(out, want) {
			t.Errorf("check as nobody does not say %q:\n%s", want, out)
		}
	}

	code, out = exitCode(t, asNobody(exec.Command(binary, "run", "--config", "", "--dir", dir)))
	if code != 1 || !strings.Contains(out, "missing capability CAP_BPF") || !strings.Contains(out, "CAP_PERFMON") {
		t.Errorf("run as nobody: exit %d, want 1 and an error naming CAP_BPF and CAP_PERFMON:\n%s", code, out)
	}

	code, out = exitCode(t, asNobody(exec.Command(binary, "check", "--config", "", "--dir", dir), capBPF, capPerfmon))
	results = checkResults(t, out)
	if code != 0 || results["capabilities"] != "OK" || results["bpf programs"] != "OK" {
		t.Errorf("check as nobody with CAP_BPF and CAP_PERFMON: exit %d, %v:\n%s", code, results, out)
	}
	if !strings.Contains(out, "without CAP_SYS_PTRACE") {
		t.Errorf("check does not say what is lost without CAP_SYS_PTRACE:\n%s", out)
	}
}

// TestOwnPIDNamespace runs threadcap in a PID namespace of its own, whose /proc does not
// show the machine's thread ids the kernel side records: check fails saying so and what to
// do, and run warns of it as it starts.
func TestOwnPIDNamespace(t *testing.T) {
	privileged.Require(t)
	dir := filepath.Join(t.TempDir(), "data")
	inOwn := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		return cmd
	}
	code, out := exitCode(t, inOwn(exec.Command(binary, "check", "--config", "", "--dir", dir)))
	results := checkResults(t, out)
	for name, result := range results {
		if want := map[bool]string{true: "FAIL", false: "OK"}[name == "pid namespace"]; result != want {
			t.Errorf("%s: %s, want %s", name, result, want)
		}
	}
	if code != 1 || !strings.Contains(out, "runs in a PID namespace of its own") ||
		!strings.Contains(out, "fix: run threadcap in the machine's PID namespace") {
		t.Errorf("check in a PID namespace of its own: exit %d, want 1 and what to do:\n%s", code, out)
	}

	var log daemontest.SyncBuffer
	run := inOwn(exec.Command(binary, "run", "--config", "", "--dir", dir, "--hz", "1"))
	run.Stdout, run.Stderr = &log, &log
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Wait()
	defer run.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(patience); !strings.Contains(log.String(), "started hour file"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("run did not start within %v:\n%s", patience, log.String())
		}
	}
	if !strings.Contains(log.String(), "runs in a PID namespace of its own") || !strings.Contains(log.String(), "hostPID: true") {
		t.Errorf("run in a PID namespace of its own does not warn of it:\n%s", log.String())
	}
}
