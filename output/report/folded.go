// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/threadcap/threadcap/output/hourfile"
)

// Stack columns. Their frames are in the hour's hourfile.Stacks file, next to the samples
// of the same hour.
const (
	colProcess     = "process"
	colUserStack   = "user_stack"
	colKernelStack = "kernel_stack"
)

// FoldedStack is one line of folded output: a stack and how many rows showed it.
type FoldedStack struct {
	// Frames are the process name, then the user frames, then the kernel frames, outermost
	// first and ';'-separated: the form flame graph tools read.
	Frames string
	Count  int64
}

// Folded answers q's window and filter as folded stacks, the most frequent first. Rows
// without a stack (threads on CPU, and off CPU in states stacks were not captured for)
// are left out; Result.Rows and Result.Inactive count them all.
func Folded(dir string, q Query) ([]FoldedStack, *Result, error) {
	q.By, q.Step, q.Top = []string{colProcess, colUserStack, colKernelStack}, 0, 0
	r, err := Run(dir, q)
	if err != nil {
		return nil, nil, err
	}
	frames, err := stackFrames(r.Files, &r.Damaged)
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int64{}
	for _, g := range r.Groups {
		process, user, kernel := g.Values[0], g.Values[1], g.Values[2]
		// Every matching row with a stack counts, an active session or not: a flame graph
		// of where threads sleep (--where state=sleeping) is as useful as one of where
		// they wait.
		rows := g.Rows + g.Inactive
		if (user == "" && kernel == "") || rows == 0 {
			continue
		}
		parts := []string{process}
		for _, hash := range []string{user, kernel} {
			if hash == "" {
				continue
			}
			f, ok := frames[hash]
			if !ok {
				// The stacks file of its hour is gone or was cut short: still counted.
				f = "[stack " + hash + "]"
			}
			parts = append(parts, f)
		}
		counts[strings.Join(parts, ";")] += rows
	}
	stacks := make([]FoldedStack, 0, len(counts))
	for f, n := range counts {
		stacks = append(stacks, FoldedStack{Frames: f, Count: n})
	}
	slices.SortFunc(stacks, func(a, b FoldedStack) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Frames, b.Frames))
	})
	return stacks, r, nil
}

// readStacks adds the stacks of the hour of hour file path (samples, or profile) to frames,
// from whichever of plain, compressed or Parquet its stacks files are (they are compressed
// apart). What could not be read of them goes to damaged.
func readStacks(path string, frames map[string]string, damaged *[]FileDamage) error {
	dir, n, ok := hourfile.ParsePath(path)
	if !ok || n.Kind == hourfile.Stacks {
		return nil
	}
	all, err := hourfile.List(dir)
	if err != nil {
		return fmt.Errorf("listing stacks files: %w", err)
	}
	for _, f := range hourfile.ForReading(all, hourfile.Stacks) {
		if !f.Hour.Equal(n.Hour) {
			continue
		}
		// A line cut short by a crash, or not of the hash,frames shape, is skipped.
		_, err := readFile(f.Path, damaged, nil, func(header [][]byte) error {
			if len(header) != 2 {
				return errors.New("not a stacks file: its header is not hash,frames")
			}
			return nil
		}, func(fields [][]byte, _ []byte) bool {
			frames[string(fields[0])] = string(value(fields, 1, true))
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RenderFolded writes one "frames count" line per stack.
func RenderFolded(w io.Writer, stacks []FoldedStack) error {
	bw := bufio.NewWriter(w)
	for _, s := range stacks {
		bw.WriteString(s.Frames)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(s.Count, 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
