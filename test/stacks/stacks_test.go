// SPDX-License-Identifier: Apache-2.0

// Package stacks runs the daemon over a program whose threads run known functions and
// checks that the rows of a thread on CPU carry the stacks of the code it ran at the tick.
package stacks

import (
	"bufio"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestStacksAtTheTick: threads spinning in spin_alpha and spin_beta have, in at least 95%
// of their on-CPU rows, a user stack whose innermost frame is that function; a thread that
// runs phase_alpha and phase_beta 50 ms each in turn has, in at least 90% of its on-CPU
// rows, a stack naming the phase that its own log says ran at the tick's instant.
func TestStacksAtTheTick(t *testing.T) {
	privileged.Require(t)
	tmp := t.TempDir()
	prog := filepath.Join(tmp, "spinners")
	if out, err := exec.Command("cc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", prog, "testdata/spinners.c").CombinedOutput(); err != nil {
		t.Fatalf("building spinners: %v\n%s", err, out)
	}
	bin, err := daemontest.Build(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	cfg := filepath.Join(tmp, "threadcap.yaml")
	if err := os.WriteFile(cfg, []byte("dir: "+dir+"\nstacks:\n  user: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	spin := exec.Command(prog, "8")
	phases, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	var switches []phaseSwitch
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(phases)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 {
				us, _ := strconv.ParseInt(f[0], 10, 64)
				switches = append(switches, phaseSwitch{at: us, fn: f[1]})
			}
		}
	}()

	daemon := exec.Command(bin, "run", "--config", cfg, "--hz", "20", "--pid", strconv.Itoa(spin.Process.Pid), "--log-level", "warn")
	notify := filepath.Join(tmp, "notify")
	conn := daemontest.ListenNotify(t, notify)
	daemon.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify)
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			daemon.Process.Kill()
			daemon.Wait()
		}
	})
	if got := daemontest.Receive(t, conn, time.Minute); got != "READY=1" {
		t.Fatalf("threadcap said %q, want READY=1", got)
	}
	<-read
	if err := spin.Wait(); err != nil {
		t.Fatalf("spinners: %v", err)
	}
	daemon.Process.Signal(syscall.SIGTERM)
	stopped = true
	if err := daemon.Wait(); err != nil {
		t.Fatalf("threadcap run: %v", err)
	}

	stacks := readTable(t, dir, hourfile.Stacks)
	frames := map[string][]string{}
	for _, s := range stacks {
		frames[s["hash"]] = strings.Split(s["frames"], ";")
	}
	type tally struct{ onCPU, right int }
	got := map[string]*tally{"alpha": {}, "beta": {}, "alternate": {}}
	for _, r := range readTable(t, dir, hourfile.Samples) {
		tl := got[r["thread"]]
		if tl == nil || r["state"] != "on_cpu" {
			continue
		}
		tl.onCPU++
		st := frames[r["user_stack"]]
		switch r["thread"] {
		case "alpha", "beta":
			if len(st) > 0 && st[len(st)-1] == "spin_"+r["thread"] {
				tl.right++
			}
		case "alternate":
			at, err := time.Parse(time.RFC3339Nano, r["sample_time"])
			if err != nil {
				t.Fatal(err)
			}
			if want := phaseAt(switches, at.UnixMicro()); want != "" && contains(st, want) {
				tl.right++
			}
		}
	}
	for _, c := range []struct {
		thread string
		share  float64
	}{{"alpha", 0.95}, {"beta", 0.95}, {"alternate", 0.90}} {
		tl := got[c.thread]
		t.Logf("%s: %d of %d on-CPU rows name the function it ran at the tick", c.thread, tl.right, tl.onCPU)
		// Three spinners on this project's two CPUs: each on CPU at about 100 of the ticks.
		if tl.onCPU < 30 {
			t.Errorf("%s has %d on-CPU rows, want at least 30 of 8 s at 20 Hz", c.thread, tl.onCPU)
		} else if float64(tl.right) < c.share*float64(tl.onCPU) {
			t.Errorf("%s: %d of %d on-CPU rows carry a stack of the function it ran, want %.0f%%", c.thread, tl.right, tl.onCPU, 100*c.share)
		}
	}
}

// phaseSwitch is when the alternating thread began a phase, and in which function.
type phaseSwitch struct {
	at int64 // Unix µs
	fn string
}

// phaseAt is the function the alternating thread ran at us, "" before its first phase.
func phaseAt(switches []phaseSwitch, us int64) string {
	i := sort.Search(len(switches), func(i int) bool { return switches[i].at > us })
	if i == 0 {
		return ""
	}
	return switches[i-1].fn
}

func contains(frames []string, fn string) bool {
	for _, f := range frames {
		if f == fn {
			return true
		}
	}
	return false
}

// readTable reads every hour file of kind in dir as maps from column to value.
func readTable(t *testing.T, dir string, kind hourfile.Kind) []map[string]string {
	t.Helper()
	files, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range files {
		if f.Kind != kind || !f.Readable() {
			continue
		}
		fh, err := hourfile.Open(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		all, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		for _, rec := range all[1:] {
			m := map[string]string{}
			for i, name := range all[0] {
				m[name] = rec[i]
			}
			out = append(out, m)
		}
	}
	return out
}
