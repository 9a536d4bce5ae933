// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/threadcap/threadcap/output/hourfile"
)

// FileDamage is what a report could not read of one file: hour files live for weeks, and
// a disk error, a crash or a careless edit costs the damage only, never the report.
type FileDamage struct {
	File string `json:"file"`
	// Lost counts the rows skipped: lines that are not valid CSV or do not fit the header,
	// values that do not read, a closed hour's last row cut short.
	Lost int64 `json:"lost_rows,omitempty"`
	// Tail says why the rest of the file was not read (a compressed file cut short): the
	// rows before the damage were.
	Tail string `json:"unread_tail,omitempty"`
	// NotRead says why none of the file was read: it cannot be opened, or is not an hour
	// file of its kind.
	NotRead string `json:"not_read,omitempty"`
}

// readFile streams the rows of an hour file of any format into row, after head has its
// header (nil head: any header will do), each with its line when that holds no quote
// (hourfile.Reader.Text). Only columns are read (all when nil): the others may read as
// empty. A row that row finds malformed (false) is skipped. What could not be
// read is added to damaged, and the rows lost returned. A file the user may not read is
// no damage: that error is returned, for the report to say how to get the right.
func readFile(path string, damaged *[]FileDamage, columns []string, head func([][]byte) error, row func(fields [][]byte, text []byte) bool) (lost int64, err error) {
	r, err := hourfile.OpenReader(path)
	if errors.Is(err, fs.ErrPermission) {
		return 0, err
	}
	if err != nil {
		*damaged = append(*damaged, FileDamage{File: path, NotRead: err.Error()})
		return 0, nil
	}
	defer r.Close()
	if r.Header() == nil {
		return 0, nil // just created: nothing written yet
	}
	if head != nil {
		if err := head(r.Header()); err != nil {
			*damaged = append(*damaged, FileDamage{File: path, NotRead: err.Error()})
			return 0, nil
		}
	}
	if columns != nil {
		r.Only(columns...)
	}
	for {
		fields, ok := r.Next()
		if !ok {
			break
		}
		if !row(fields, r.Text()) {
			r.Reject()
		}
	}
	d := FileDamage{File: path, Lost: r.Lost()}
	if err := r.Tail(); err != nil {
		d.Tail = err.Error()
	}
	if d.Lost > 0 || d.Tail != "" {
		*damaged = append(*damaged, d)
	}
	return d.Lost, nil
}

// WriteDamage says, one line a file, what could not be read of which file: for the views
// without a header of their own (folded stacks, on stderr).
func WriteDamage(w io.Writer, damaged []FileDamage) { writeDamage(w, damaged) }

// writeDamage says, one line a file, what could not be read of which file.
func writeDamage(w io.Writer, damaged []FileDamage) {
	for _, d := range damaged {
		switch {
		case d.NotRead != "":
			fmt.Fprintf(w, "not read: %s: %s\n", d.File, d.NotRead)
		case d.Tail != "":
			fmt.Fprintf(w, "read in part: %s: %d damaged %s skipped, the rest unreadable: %s\n",
				d.File, d.Lost, plural(d.Lost, "row", "rows"), d.Tail)
		default:
			fmt.Fprintf(w, "skipped %d damaged %s in %s\n", d.Lost, plural(d.Lost, "row", "rows"), d.File)
		}
	}
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
