// SPDX-License-Identifier: Apache-2.0

package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
)

// profileMatchable are the profile files' columns a filter may name.
var profileMatchable = []string{"pid", "tid", "process", "thread", "span"}

// FoldedProfile answers q's window and filter (on pid, tid, process, thread and span) from the
// CPU profile's files: folded stacks (process, user frames, kernel frames) and the
// samples that showed them, the most first. A sample whose stacks were lost counts as
// process;[unknown]. damaged lists the files read in part or not at all.
func FoldedProfile(dir string, q Query) (stacks []FoldedStack, damaged []FileDamage, err error) {
	for _, m := range q.Where {
		if !slices.Contains(profileMatchable, m.Column) {
			return nil, nil, fmt.Errorf("--where %s: the profile files are filtered by %s only",
				m.Column, strings.Join(profileMatchable, ", "))
		}
	}
	all, err := hourfile.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("listing profile files: %w", err)
	}
	w := q.Window
	type line struct{ process, user, kernel string }
	counts := map[line]int64{}
	var read []string
	for _, f := range hourfile.ForReading(all, hourfile.Profile) {
		if !f.Hour.Before(w.To) || !f.Hour.Add(time.Hour).After(w.From) {
			continue
		}
		read = append(read, f.Path)
		var col map[string]int
		var where []matcher
		_, err := readFile(f.Path, &damaged, nil, func(h [][]byte) error {
			col = map[string]int{}
			for i, name := range h {
				col[string(name)] = i
			}
			for _, c := range schema.ProfileColumns {
				if _, ok := col[c.Name]; !ok {
					return fmt.Errorf("not a profile file: no column %s", c.Name)
				}
			}
			where = profileMatchers(q.Where, col)
			return nil
		}, func(fields [][]byte, _ []byte) bool {
			in, ok := minuteIn(col, fields, w)
			if !in || slices.ContainsFunc(where, func(m matcher) bool { return !m.matches(fields) }) {
				return ok
			}
			n, ok := atoi(fields[col["samples"]])
			if !ok {
				return false
			}
			counts[line{
				process: string(value(fields, col["process"], true)),
				user:    string(fields[col["user_stack"]]),
				kernel:  string(fields[col["kernel_stack"]]),
			}] += n
			return true
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(read) == 0 {
		return nil, nil, fmt.Errorf("no profile file in %s covers %s to %s: the CPU profile is recorded when profile.hz is set",
			dir, w.From.Format(time.RFC3339), w.To.Format(time.RFC3339))
	}
	frames, err := stackFrames(read, &damaged)
	if err != nil {
		return nil, nil, err
	}
	folded := map[string]int64{}
	for l, n := range counts {
		parts := []string{l.process}
		for _, hash := range []string{l.user, l.kernel} {
			if hash == "" {
				continue
			}
			f, ok := frames[hash]
			if !ok {
				f = "[stack " + hash + "]" // the stacks file of its hour is gone or cut short
			}
			parts = append(parts, f)
		}
		if len(parts) == 1 {
			parts = append(parts, "[unknown]")
		}
		folded[strings.Join(parts, ";")] += n
	}
	stacks = make([]FoldedStack, 0, len(folded))
	for f, n := range folded {
		stacks = append(stacks, FoldedStack{Frames: f, Count: n})
	}
	slices.SortFunc(stacks, func(a, b FoldedStack) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Frames, b.Frames))
	})
	return stacks, damaged, nil
}

// profileMatchers are the --where matches on a profile file of columns col, one matcher
// per column (its values are alternatives), as layoutOf makes them for the samples.
func profileMatchers(where []Match, col map[string]int) []matcher {
	var out []matcher
	for _, m := range where {
		i := slices.IndexFunc(out, func(w matcher) bool { return w.column == m.Column })
		if i < 0 {
			out = append(out, matcher{column: m.Column, idx: col[m.Column], text: textColumns[m.Column]})
			i = len(out) - 1
		}
		out[i].values = append(out[i].values, []byte(m.Value))
	}
	return out
}
