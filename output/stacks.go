// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// stackSet is what the current hour's stacks file holds, so that each stack is written
// to it once and an hour's files can be read without any other hour's.
type stackSet struct {
	sideFile
	seen map[string]bool
}

// writeStacks adds the stacks rows refer to that the hour's stacks file does not have yet,
// before the rows themselves, so that a reader never meets a hash it cannot resolve. A
// stack that cannot be written is tried again with the next row that shows it.
func (w *Writer) writeStacks(rows []state.Sample) {
	w.writeStackSeq(w.file.hour, func(yield func(*state.Stack) bool) {
		for i := range rows {
			if !yield(rows[i].KernelStack) || !yield(rows[i].UserStack) {
				return
			}
		}
	})
}

// writeStackSeq adds the stacks of seq (nil ones skipped) that hour's stacks file does not
// have yet: see writeStacks.
func (w *Writer) writeStackSeq(hour time.Time, seq iter.Seq[*state.Stack]) {
	var buf []byte
	var added []string
	for st := range seq {
		if st == nil {
			continue
		}
		if !w.stacks.current(hour) {
			if err := w.openStacks(hour); err != nil {
				w.stacksFailed(err)
				return
			}
		}
		if w.stacks.seen[st.Hash] {
			continue
		}
		w.stacks.seen[st.Hash] = true
		added = append(added, st.Hash)
		buf = schema.AppendStackCSV(buf, st)
	}
	if len(buf) == 0 {
		return
	}
	if err := w.stacks.appendLines(buf); err != nil {
		for _, h := range added {
			delete(w.stacks.seen, h)
		}
		w.stacksFailed(err)
	}
}

func (w *Writer) stacksFailed(err error) {
	w.stacks.fail(w, err, "writing stacks failed; rows refer to stacks the hour's stacks file lacks")
}

// openStacks opens hour's stacks file, reading which stacks an earlier run already wrote
// to it.
func (w *Writer) openStacks(hour time.Time) error {
	w.stacks.seen = nil
	if err := w.stacks.open(w, hour); err != nil {
		return err
	}
	seen, err := stackHashes(w.stacks.file)
	if err != nil {
		name := w.stacks.file.f.Name()
		w.stacks.close()
		return fmt.Errorf("reading %s: %w", name, err)
	}
	w.stacks.seen = seen
	return nil
}

// stackHashes lists the hashes a stacks file holds, up to its last whole line.
func stackHashes(hf *hourFile) (map[string]bool, error) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.NewSectionReader(hf.f, 0, hf.size))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if hash, _, ok := strings.Cut(line, ","); ok && line+"\n" != schema.StacksHeader() {
			seen[hash] = true
		}
	}
	return seen, sc.Err()
}
