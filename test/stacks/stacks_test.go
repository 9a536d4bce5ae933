// SPDX-License-Identifier: Apache-2.0

// Package stacks runs the daemon over a program whose threads run known functions and
// checks that the rows of a thread on CPU carry the stacks of the code it ran at the tick.
package stacks

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	prog := build(t, "cc", "testdata/spinners.c")
	spin := exec.Command(prog, "8")
	phases, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var switches []phaseSwitch
	read := make(chan struct{})
	rows, frames := record(t, spin, func() {
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
	}, func() { <-read })

	type tally struct{ onCPU, right int }
	got := map[string]*tally{"alpha": {}, "beta": {}, "alternate": {}}
	for _, r := range rows {
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
			if want := phaseAt(switches, at.UnixMicro()); want != "" && slices.Contains(st, want) {
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

// TestFrameNames: the functions of a C++ template, a Go program and JavaScript compiled by
// Node's JIT (named through its perf map) are named in their spinners' user stacks.
func TestFrameNames(t *testing.T) {
	privileged.Require(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node to run JIT code: apt-get install nodejs")
	}
	for _, c := range []struct {
		name string
		cmd  func() *exec.Cmd
		want string
	}{
		{"c++", func() *exec.Cmd { return exec.Command(build(t, "g++", "testdata/templated.cpp"), "4") }, "work::spin<long>"},
		{"go", func() *exec.Cmd { return exec.Command(build(t, "go", "./testdata/gospin"), "4") }, "main.spinHere"},
		{"node", func() *exec.Cmd {
			script, err := filepath.Abs("testdata/hot.js")
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(node, "--perf-basic-prof", script, "4")
			cmd.Dir = t.TempDir() // where node leaves any log of its own
			return cmd
		}, "hotLoopForThreadcap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, frames := record(t, c.cmd(), nil, nil)
			var onCPU, named int
			for _, r := range rows {
				if r["state"] != "on_cpu" {
					continue
				}
				onCPU++
				for _, f := range frames[r["user_stack"]] {
					if strings.Contains(f, c.want) {
						named++
						break
					}
				}
			}
			t.Logf("%d of %d on-CPU rows name %s; e.g. %v", named, onCPU, c.want, someStack(rows, frames))
			if onCPU < 10 || named*2 < onCPU {
				t.Errorf("%d of %d on-CPU rows name %s, want most of at least 10", named, onCPU, c.want)
			}
		})
	}
}

// someStack is the user stack of the last on-CPU row that has one, for the log.
func someStack(rows []map[string]string, frames map[string][]string) []string {
	for i := len(rows) - 1; i >= 0; i-- {
		if st := frames[rows[i]["user_stack"]]; rows[i]["state"] == "on_cpu" && st != nil {
			return st
		}
	}
	return nil
}

// build compiles a test program with frame pointers, so that user stacks walk through it.
func build(t *testing.T, tool, src string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(strings.TrimSuffix(src, filepath.Ext(src))))
	var cmd *exec.Cmd
	switch tool {
	case "go":
		cmd = exec.Command("go", "build", "-o", bin, src)
	default:
		cmd = exec.Command(tool, "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", bin, src)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
	return bin
}

// record starts prog, then the daemon (20 Hz, user stacks on) over prog's pid until prog
// exits, and returns the rows and the stacks by hash (frames outermost first). started
// runs once prog has started, before the daemon; done before prog is waited for.
func record(t *testing.T, prog *exec.Cmd, started, done func()) ([]map[string]string, map[string][]string) {
	t.Helper()
	tmp := t.TempDir()
	bin := daemonBinary(t)
	dir := filepath.Join(tmp, "data")
	cfg := filepath.Join(tmp, "threadcap.yaml")
	if err := os.WriteFile(cfg, []byte("dir: "+dir+"\nstacks:\n  user: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prog.Process.Kill()
		prog.Wait()
		os.Remove(fmt.Sprintf("/tmp/perf-%d.map", prog.Process.Pid)) // node's, with --perf-basic-prof
	})
	if started != nil {
		started()
	}
	daemon := daemontest.Start(t, bin, time.Minute, "--config", cfg, "--hz", "20", "--pid", strconv.Itoa(prog.Process.Pid), "--log-level", "warn")
	if done != nil {
		done()
	}
	if err := prog.Wait(); err != nil {
		t.Fatalf("%s: %v", prog.Path, err)
	}
	daemon.Stop(t)
	frames := map[string][]string{}
	for _, s := range daemontest.ReadTable(t, dir, hourfile.Stacks) {
		frames[s["hash"]] = strings.Split(s["frames"], ";")
	}
	return daemontest.ReadTable(t, dir, hourfile.Samples), frames
}

// binDir holds the threadcap binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "threadcap-stacks-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// builtDaemon builds threadcap once for the package's tests.
var builtDaemon = sync.OnceValues(func() (string, error) { return daemontest.Build(binDir) })

func daemonBinary(t *testing.T) string {
	t.Helper()
	bin, err := builtDaemon()
	if err != nil {
		t.Fatal(err)
	}
	return bin
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
