// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTopStacks: found with /, the D-state pwrite64 group's stacks are report --folded's
// for that filter: the same count and frames, most frequent first.
func TestTopStacks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	to := time.Now().Add(-time.Hour).Truncate(time.Minute)
	from := to.Add(-2 * time.Minute)
	recordPast(t, dir, from, to)
	window := []string{"--dir", dir, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}

	term := newTerminal(t, 80, 24)
	term.run(topCommandLine(t, 0, window...))
	want := reportJSON(t, window...)
	term.waitFor("the first screen", func(s string) bool { return strings.Contains(s, want.summary()) })
	term.keys("/")
	term.keys("-l", "pwrite")
	term.keys("Enter")
	term.waitFor("the pwrite64 group selected", func(s string) bool { return regexp.MustCompile(`(?m)^> uninterruptible +pwrite64`).MatchString(s) })
	term.keys("s")
	screen := term.waitFor("the stacks", func(s string) bool { return strings.Contains(s, "#1 ") })
	t.Logf("stacks:\n%s", screen)

	cfg, err := parseReportFlags(append([]string{"--config", "", "--folded", "--where", "state=uninterruptible", "--where", "syscall=pwrite64"}, window...), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runReport(cfg, &out); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	i := strings.LastIndexByte(first, ' ')
	frames, count := first[:i], first[i+1:]
	if !strings.Contains(screen, "#1  "+count+" rows, ") {
		t.Errorf("report --folded's first stack has %s rows; the screen:\n%s", count, screen)
	}
	var shown []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		switch {
		case strings.HasPrefix(l, "#1 "):
			in = true
		case in && strings.HasPrefix(l, "    "):
			shown = append(shown, strings.TrimSpace(l))
		case in:
			in = false
		}
	}
	if got := strings.Join(shown, ";"); got != frames {
		t.Errorf("frames on screen %q, report --folded says %q", got, frames)
	}

	// The latency pane counts the group's rows in a syscall at the ticks: all of its rows,
	// which the recording gives a time in pwrite64 each.
	term.keys("s") // back to the table
	term.waitFor("the table again", func(s string) bool { return strings.Contains(s, "THREADS") })
	term.keys("l")
	screen = term.waitFor("the latencies", func(s string) bool { return strings.Contains(s, "syscalls ") })
	t.Logf("latency:\n%s", screen)
	group := reportJSON(t, append([]string{"--where", "state=uninterruptible", "--where", "syscall=pwrite64"}, window...)...)
	if want := regexp.MustCompile(fmt.Sprintf(`(?m)^  syscalls +%d  p50 `, group.Rows)); !want.MatchString(screen) {
		t.Errorf("report counts %d rows of the group; the latency pane:\n%s", group.Rows, screen)
	}
	quit(t, term)
}

// sgrRe finds the escape sequences of styles in capture-pane -e's output.
var sgrRe = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// reverseRe finds reverse video (7) among an SGR's parameters.
var reverseRe = regexp.MustCompile(`\x1b\[(?:[0-9]*;)*7m`)

// hasColour tells whether a style sets a colour: 30-38, 40-48, 90-97, 100-107 among an
// SGR's parameters. Defaults (39, 49) are no colour.
func hasColour(styled string) bool {
	for _, m := range sgrRe.FindAllStringSubmatch(styled, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			n, _ := strconv.Atoi(p)
			if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 97) || (n >= 100 && n <= 107) {
				return true
			}
		}
	}
	return false
}

// TestTopNoColour: with NO_COLOR set the screen has no colour, and the selection is still
// shown (reverse video and its mark); without it, the chart has colours.
func TestTopNoColour(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	to := time.Now().Add(-time.Hour).Truncate(time.Minute)
	from := to.Add(-time.Minute)
	recordPast(t, dir, from, to)
	window := []string{"--dir", dir, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
	want := reportJSON(t, window...)
	for _, c := range []struct {
		env    []string
		colour bool
	}{{[]string{"NO_COLOR=1"}, false}, {nil, true}} {
		term := newTerminal(t, 80, 24, c.env...)
		term.run(topCommandLine(t, 0, window...))
		term.waitFor("the first screen", func(s string) bool { return strings.Contains(s, want.summary()) })
		styled := term.styled()
		if hasColour(styled) != c.colour {
			t.Errorf("env %v: colour on screen %v, want %v:\n%q", c.env, hasColour(styled), c.colour, styled)
		}
		if !reverseRe.MatchString(styled) {
			t.Errorf("env %v: the selection is not in reverse video:\n%q", c.env, styled)
		}
		quit(t, term)
	}
}
