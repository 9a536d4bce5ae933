// SPDX-License-Identifier: Apache-2.0

// Package profile runs the daemon with the CPU profile on over threads on CPU for known
// shares of the time, and checks the profile file and report --folded --profile against
// the kernel's own counts of their CPU time.
package profile

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestProfileShares: three threads on CPU 100%, 50% and 20% of the time for 10 s, each in
// a function of its own, under the daemon at profile.hz 99. Per thread, its samples in the
// profile file ÷ the three's agree within 0.05 (see shareTolerance) with its share of
// their CPU time as the kernel counts it (CLOCK_THREAD_CPUTIME_ID, schedstat's count); report --folded --profile
// names each thread's function, innermost under the process, with its samples.
func TestProfileShares(t *testing.T) {
	privileged.Require(t)
	tmp := t.TempDir()
	prog := filepath.Join(tmp, "duty")
	if out, err := exec.Command("cc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", prog, "testdata/duty.c").CombinedOutput(); err != nil {
		t.Fatalf("building duty.c: %v\n%s", err, out)
	}
	cmd := exec.Command(prog, "10")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	bin, err := daemontest.Build(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	cfg := filepath.Join(tmp, "threadcap.yaml")
	if err := os.WriteFile(cfg, []byte("dir: "+dir+"\nprofile:\n  hz: 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := daemontest.Start(t, bin, time.Minute, "--config", cfg, "--pid", strconv.Itoa(cmd.Process.Pid), "--log-level", "warn")
	fmt.Fprintln(stdin, "go")
	cpu := map[string]float64{} // by tid
	names := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for len(cpu) < 3 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 {
			ns, _ := strconv.ParseFloat(f[2], 64)
			cpu[f[1]], names[f[1]] = ns, f[0]
		}
	}
	// Stopped while the program still runs (idle), so that the last take names its stacks.
	daemon.Stop(t)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(cpu) != 3 {
		t.Fatalf("the program reported %d threads, want 3", len(cpu))
	}

	samples := map[string]float64{}
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, r := range daemontest.ReadTable(t, dir, hourfile.Profile) {
		if r["pid"] == pid && r["hz"] == "99" {
			n, _ := strconv.ParseFloat(r["samples"], 64)
			samples[r["tid"]] += n
		}
	}
	var cpuSum, sampleSum float64
	for tid := range cpu {
		cpuSum += cpu[tid]
		sampleSum += samples[tid]
	}
	for tid, ns := range cpu {
		share, want := samples[tid]/sampleSum, ns/cpuSum
		tol := shareTolerance(want, sampleSum)
		t.Logf("%s (tid %s): %.0f samples, share %.3f; CPU %.2f s, share %.3f (within %.3f)", names[tid], tid, samples[tid], share, ns/1e9, want, tol)
		if math.Abs(share-want) > tol {
			t.Errorf("%s: share of samples %.3f, of CPU time %.3f: more than %.3f apart", names[tid], share, want, tol)
		}
	}
	// Not checked: the timer samples time the hypervisor steals, the kernel's count not.
	t.Logf("the samples stand for %.2f s of CPU at 99 Hz, the kernel counted %.2f s", sampleSum/99, cpuSum/1e9)

	out, err := exec.Command(bin, "report", "--config", "", "--dir", dir, "--last", "1h", "--folded", "--profile", "--where", "pid="+pid).CombinedOutput()
	if err != nil {
		t.Fatalf("report --folded --profile: %v\n%s", err, out)
	}
	for tid, name := range names {
		fn := "spin_" + name
		var n float64
		for _, line := range strings.Split(string(out), "\n") {
			frames, count, ok := strings.Cut(line, " ")
			if ok && strings.HasPrefix(frames, "duty;") && strings.Contains(frames, ";"+fn) {
				c, _ := strconv.ParseFloat(count, 64)
				n += c
			}
		}
		// Most of a thread's samples are in its function (the rest: the clock read it
		// calls, and the kernel's work on its behalf).
		t.Logf("%s: %.0f of its %.0f samples under %s in the folded profile", name, n, samples[tid], fn)
		if n < 0.8*samples[tid] {
			t.Errorf("report --folded --profile has %.0f samples under %s, want most of its %.0f:\n%s", n, fn, samples[tid], out)
		}
	}
}

// shareTolerance is how far a share of n samples may be from want: 0.05, or, when the
// machine gave the threads so little CPU that n samples cannot resolve 0.05 (three
// standard deviations of a share drawn at random past it: fewer than about 900 samples,
// where a quiet machine gives some 1,700 in 10 s), those three standard deviations.
func shareTolerance(want, n float64) float64 {
	return math.Max(0.05, 3*math.Sqrt(want*(1-want)/n))
}
