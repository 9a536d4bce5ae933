// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/daemontest"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestMain lets the test binary serve as a workload process too: the harness runs its own
// executable again as "workload KIND".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		if err := serveWorkload(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "workload: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSuiteEndToEnd runs the whole benchmark, briefly: the real daemon, every workload
// under every configuration, and checks the tables hold a figure for each.
func TestSuiteEndToEnd(t *testing.T) {
	privileged.Require(t)
	dir := t.TempDir()
	bin, err := daemontest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	opt := options{
		daemon: bin, out: filepath.Join(dir, "results.md"), tmp: dir,
		rounds: 1, window: 200 * time.Millisecond, scaleRounds: 1, scaleWindow: 300 * time.Millisecond,
		rates: []int{20}, scale: []int{300}, busy: 20, syscallThreads: 1, mixUsers: 2,
	}
	if err := run(opt); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(opt.out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	row := func(prefix string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return strings.Split(l, " | ")
			}
		}
		t.Errorf("no row %q in the results:\n%s", prefix, b)
		return nil
	}
	for _, wl := range []string{wlSyscalls, wlPingPong, wlMix, wlDirectRead, "scale 300"} {
		for _, c := range configs(opt.rates) {
			if c.settings != "" && strings.HasPrefix(wl, "scale") {
				continue
			}
			// | workload | config | throughput | ...: a figure, not a dash.
			if r := row("| " + wl + " | " + c.name + " | "); len(r) > 2 && !strings.ContainsAny(r[2], "0123456789") {
				t.Errorf("%s under %s: no throughput in %q", wl, c.name, strings.Join(r, " | "))
			}
			if !c.daemon() {
				continue
			}
			// | workload | threads | config | CPU per tick | ... | start → first row |
			daemonRow := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(wl) + ` \| \d+ \| ` + regexp.QuoteMeta(c.name) + ` \| [0-9.]+ ms \([0-9.–]+\) \| .* \| [0-9]+ ms \|$`)
			if !daemonRow.Match(b) {
				t.Errorf("%s under %s: no daemon cost row with figures in:\n%s", wl, c.name, b)
			}
		}
	}
	for _, tg := range targets {
		row("| " + tg.what + " | ")
	}
}
