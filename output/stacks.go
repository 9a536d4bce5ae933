// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/threadcap/threadcap/state"
)

// stacksHeader heads every stacks file: a stack's hash, as rows show it, and its frames,
// outermost first and ';'-separated (the folded form flame graph tools read).
const stacksHeader = "hash,frames\n"

// StacksHeader is the first line of every stacks file, newline included.
func StacksHeader() string { return stacksHeader }

// AppendStackCSV appends one line of a stacks file.
func AppendStackCSV(dst []byte, s *state.Stack) []byte {
	dst = appendText(dst, s.Hash)
	dst = appendText(append(dst, ','), s.Frames)
	return append(dst, '\n')
}

// stackSet is what the current hour's stacks file holds, so that each stack is written
// to it once and an hour's files can be read without any other hour's.
type stackSet struct {
	file   *hourFile
	seen   map[string]bool
	failed bool // writing failed this hour: logged once
}

// writeStacks adds the stacks rows refer to that the hour's stacks file does not have yet,
// before the rows themselves, so that a reader never meets a hash it cannot resolve. A
// stack that cannot be written is tried again with the next row that shows it.
func (w *Writer) writeStacks(rows []state.Sample) {
	var buf []byte
	var added []string
	for i := range rows {
		for _, st := range [...]*state.Stack{rows[i].KernelStack, rows[i].UserStack} {
			if st == nil {
				continue
			}
			if w.stacks.file == nil || !w.stacks.file.hour.Equal(w.file.hour) {
				if err := w.openStacks(); err != nil {
					w.stacksFailed(err)
					return
				}
			}
			if w.stacks.seen[st.Hash] {
				continue
			}
			w.stacks.seen[st.Hash] = true
			added = append(added, st.Hash)
			buf = AppendStackCSV(buf, st)
		}
	}
	if len(buf) == 0 {
		return
	}
	if err := w.appendStackLines(buf); err != nil {
		for _, h := range added {
			delete(w.stacks.seen, h)
		}
		w.stacksFailed(err)
	}
}

func (w *Writer) stacksFailed(err error) {
	if !w.stacks.failed {
		w.stacks.failed = true
		w.log.WithError(err).Warn("writing stacks failed; rows refer to stacks the hour's stacks file lacks")
	}
}

// appendStackLines writes whole lines to the hour's stacks file; a short write is cut
// back so that the file holds whole lines only.
func (w *Writer) appendStackLines(buf []byte) error {
	hf := w.stacks.file
	if hf.size == 0 {
		buf = append([]byte(stacksHeader), buf...)
	}
	n, err := hf.f.Write(buf)
	if err == nil {
		hf.size += int64(n)
		return nil
	}
	return errors.Join(err, hf.f.Truncate(hf.size))
}

// openStacks opens the current hour's stacks file, reading which stacks an earlier run
// already wrote to it.
func (w *Writer) openStacks() error {
	if err := w.closeStacks(); err != nil {
		w.log.WithError(err).Debug("closing the previous stacks file failed")
	}
	hf, _, err := openKindFile(stackFiles, w.cfg.Dir, w.file.hour, w.cfg.FileMode, w.gid)
	if err != nil {
		return err
	}
	seen, err := stackHashes(hf)
	if err != nil {
		hf.f.Close()
		return fmt.Errorf("reading %s: %w", hf.f.Name(), err)
	}
	w.stacks.file, w.stacks.seen = hf, seen
	return nil
}

// stackHashes lists the hashes a stacks file holds, up to its last whole line.
func stackHashes(hf *hourFile) (map[string]bool, error) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.NewSectionReader(hf.f, 0, hf.size))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if hash, _, ok := strings.Cut(line, ","); ok && line+"\n" != stacksHeader {
			seen[hash] = true
		}
	}
	return seen, sc.Err()
}

// closeStacks ends the hour's stacks file, synced like the samples so that compression
// reads what a power loss would keep.
func (w *Writer) closeStacks() error {
	if w.stacks.file == nil {
		return nil
	}
	f := w.stacks.file.f
	w.stacks.file, w.stacks.seen = nil, nil
	return errors.Join(f.Sync(), f.Close())
}
