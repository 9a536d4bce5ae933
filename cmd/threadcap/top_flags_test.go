// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/report"
)

// TestParseTopFlags: without --from top is live over the last minute (or --last); with
// it, it replays the window; report's --where and --by are taken as report takes them.
func TestParseTopFlags(t *testing.T) {
	now := reportNow
	for _, c := range []struct {
		args   []string
		live   bool
		window report.Window
		by     []string
	}{
		{nil, true, report.Window{From: now.Add(-time.Minute), To: now}, []string{"state", "syscall"}},
		{[]string{"--last", "5m", "--by", "process"}, true, report.Window{From: now.Add(-5 * time.Minute), To: now}, []string{"process"}},
		{[]string{"--from", "03:10", "--to", "03:15"}, false,
			report.Window{From: time.Date(2026, 11, 21, 3, 10, 0, 0, time.UTC), To: time.Date(2026, 11, 21, 3, 15, 0, 0, time.UTC)},
			[]string{"state", "syscall"}},
	} {
		cfg, err := parseTopFlags(append([]string{"--config", "", "--dir", "/srv/tc", "--where", "process=mysqld"}, c.args...), now, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if cfg.Live != c.live || cfg.Window != c.window || cfg.Last != c.window.Duration() || !slices.Equal(cfg.By, c.by) ||
			cfg.Dir != "/srv/tc" || !slices.Equal(cfg.Where, []report.Match{{Column: "process", Value: "mysqld"}}) {
			t.Errorf("%v: live %v window %v last %v by %v dir %q where %v", c.args, cfg.Live, cfg.Window, cfg.Last, cfg.By, cfg.Dir, cfg.Where)
		}
	}
}

// TestTopFlagMistakes: a mistake is said as report says it, and the flags' checks are
// reported together.
func TestTopFlagMistakes(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--by", "state,nosuch", "--where", "nosuch2=1"}, []string{`there is no column "nosuch"`, `there is no column "nosuch2"`}},
		{[]string{"--where", "bad"}, []string{`--where "bad": write column=value`}},
		{[]string{"--last", "5m", "--from", "03:10"}, []string{"--last cannot be combined"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
	} {
		_, err := parseTopFlags(append([]string{"--config", ""}, c.args...), reportNow, io.Discard)
		for _, want := range c.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v; want it to say %q", c.args, err, want)
			}
		}
	}
}
