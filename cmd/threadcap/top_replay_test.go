// SPDX-License-Identifier: Apache-2.0

package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTopReplay: over a recording of known workloads, the first screen's totals and table
// are report's; Enter on a group and Backspace give report's numbers for that filter and
// back; the screen fits 80×24 and, resized, 200×60; q gives the shell its prompt back.
func TestTopReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	from := time.Now().Add(-2 * time.Hour).Truncate(time.Hour).Add(58 * time.Minute)
	to := from.Add(3 * time.Minute) // across an hour: two files
	// The chart shows as long again on either side of the window.
	recordPast(t, dir, from.Add(-3*time.Minute), to.Add(3*time.Minute))
	window := []string{"--dir", dir, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}

	term := newTerminal(t, 80, 24)
	term.run(topCommandLine(t, 0, window...))
	want := reportJSON(t, window...)
	screen := term.waitFor("the report's totals", func(s string) bool { return strings.Contains(s, want.summary()) })
	t.Logf("the first screen:\n%s", screen)
	checkTable(t, screen, want)
	checkFits(t, term, 80, 24)

	// Enter on the selected (first, most active) group: its values become filters, and
	// the table is grouped by the next columns.
	first := want.Groups[0].Values
	drilled := append(slices.Clone(window), "--where", "state="+first["state"], "--where", "syscall="+first["syscall"],
		"--by", "process,thread")
	wantDrilled := reportJSON(t, drilled...)
	term.keys("Enter")
	screen = term.waitFor("the drilled-down totals", func(s string) bool {
		return strings.Contains(s, wantDrilled.summary()) && strings.Contains(s, "[1] state="+first["state"])
	})
	t.Logf("after Enter:\n%s", screen)
	checkTable(t, screen, wantDrilled)

	term.keys("BSpace")
	screen = term.waitFor("the totals again", func(s string) bool {
		return strings.Contains(s, want.summary()) && strings.Contains(s, "where: every row")
	})
	checkTable(t, screen, want)

	term.resize(200, 60)
	screen = term.waitFor("a 200-column screen", func(s string) bool {
		return strings.Contains(s, "L live") && strings.Contains(s, want.summary()) // the keys line is cut at 80
	})
	t.Logf("at 200×60:\n%s", screen)
	checkFits(t, term, 200, 60)
	checkTable(t, screen, want)

	quit(t, term)
}

// checkTable compares the table on screen with the report's groups, row by row.
func checkTable(t *testing.T, screen string, want jsonReport) {
	t.Helper()
	got := tableOf(screen, want.By)
	if len(got) == 0 {
		t.Fatalf("no table rows on screen:\n%s", screen)
	}
	wantRows := want.rows(len(got))
	for i := range got {
		// Values may be cut short on screen (…); the numbers never are.
		g, w := got[i], wantRows[i]
		n := len(g)
		if g[n-2] != w[n-2] || g[n-1] != w[n-1] {
			t.Errorf("row %d: threads and CPU s %v, report says %v", i+1, g[n-2:], w[n-2:])
		}
		for j := range n - 2 {
			if v := strings.TrimSuffix(g[j], "…"); !strings.HasPrefix(w[j], v) && !strings.Contains(g[j], `\x`) {
				t.Errorf("row %d: value %q, report says %q", i+1, g[j], w[j])
			}
		}
	}
}
