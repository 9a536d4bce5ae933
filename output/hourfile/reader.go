// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Reader reads the records of one hour file of any format, CSV (plain or compressed) or
// Parquet, in one form: the header's column names, then each row's fields as the CSV holds
// them. A Parquet file reads as the CSV it was written from, less its host column: text
// with its formula guard, times in TimeLayout in the local time zone, NULL as an empty
// field. So every reader reads every format, and gives the same answers for either.
//
// A reader of files that live for weeks loses only what is damaged: a record that does not
// parse or does not fit the header costs its line (Lost), reading going on at the next
// line; a file whose rest cannot be read (a truncated compressed file, a damaged Parquet
// page) gives the rows before the damage, and Tail says why the rest was not read.
type Reader struct {
	path    string
	header  [][]byte
	csv     *RecordReader
	pq      *parquetRows
	closer  func() error
	plain   bool // a plain CSV file: a last row without a newline is being written
	lost    int64
	tail    error
	done    bool
	columns int
}

// OpenReader opens the hour file at path and reads its header. An error means that none of
// the file can be read, and names it; a file without even a header (just created) opens,
// and has no rows.
func OpenReader(path string) (*Reader, error) {
	if strings.HasSuffix(path, Parquet) {
		return openParquetReader(path)
	}
	rc, err := Open(path)
	if err != nil {
		return nil, err
	}
	r := &Reader{path: path, csv: NewRecordReader(rc), closer: rc.Close,
		plain: !strings.HasSuffix(path, Gzip) && !strings.HasSuffix(path, Zstd)}
	header, err := r.csv.Read()
	switch {
	case errors.Is(err, io.EOF) && r.plain:
		r.done = true
		return r, nil
	case errors.Is(err, io.EOF):
		// A closed hour is compressed only once it has a header.
		rc.Close()
		return nil, fmt.Errorf("reading %s: no header: the file is cut short", path)
	case err != nil:
		rc.Close()
		return nil, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	for _, h := range header {
		r.header = append(r.header, slices.Clone(h))
	}
	r.columns = len(r.header)
	return r, nil
}

// Header is the file's column names; nil for a file without a header.
func (r *Reader) Header() [][]byte { return r.header }

// Only says which columns the reader will look at: in a Parquet file only those are
// decoded, and the others read as empty fields, which makes reading a few columns of a
// wide file several times faster. A CSV file reads whole, as its rows are lines. Call it
// before the first Next.
func (r *Reader) Only(columns ...string) {
	if r.pq != nil && r.header != nil {
		r.pq.only(r.header, columns)
	}
}

// Next returns the next row's fields, as many as the header's, valid until the next call;
// false at the end of what can be read. Records that do not parse or have another number
// of fields are skipped and counted in Lost.
func (r *Reader) Next() ([][]byte, bool) {
	for !r.done {
		var fields [][]byte
		var err error
		if r.pq != nil {
			fields, err = r.pq.next()
		} else {
			fields, err = r.csv.Read()
		}
		switch {
		case err == nil && len(fields) == r.columns:
			return fields, true
		case err == nil:
			r.Reject()
		case errors.Is(err, ErrBareQuote) || errors.Is(err, ErrQuote):
			r.lost++
		case errors.Is(err, io.EOF):
			r.done = true
			// A closed hour's last row cut short is damage; the current hour's is a row
			// the writer is still writing.
			if r.csv != nil && r.csv.Partial() > 0 && !r.plain {
				r.lost++
			}
		default:
			r.done = true
			r.tail = err
			if r.csv != nil && r.csv.Partial() > 0 {
				r.lost++
			}
		}
	}
	return nil, false
}

// Follow makes a plain CSV file read to its end, which its writer may still be adding to
// (the current hour's), readable on from there: Next returns the rows written since, the
// one being written when the end was reached included. It does nothing for a compressed
// or Parquet file, or one whose rest could not be read.
func (r *Reader) Follow() {
	if r.done && r.plain && r.csv != nil && r.tail == nil {
		r.done = false
		r.csv.Resume()
	}
}

// Text is the line of the row Next returned last when it holds no double quote, its fields
// that line cut at its commas (RecordReader.Text, Span); nil otherwise, and for Parquet.
func (r *Reader) Text() []byte {
	if r.csv == nil {
		return nil
	}
	return r.csv.Text()
}

// Reject says that the row Next returned last is damaged (a value does not read): it is
// counted in Lost, and when it spans lines the lines after its first are read again.
func (r *Reader) Reject() {
	r.lost++
	if r.csv != nil {
		r.csv.Reject()
	}
}

// Lost counts the records skipped as damaged: lines that do not parse, do not fit the
// header or were rejected, and a closed hour's last row cut short.
func (r *Reader) Lost() int64 { return r.lost }

// Tail is why the rest of the file could not be read, nil when all of it was.
func (r *Reader) Tail() error { return r.tail }

// Line is the line of a CSV file the last record read starts on, for messages; 0 for
// Parquet.
func (r *Reader) Line() int64 {
	if r.csv == nil {
		return 0
	}
	return r.csv.Line()
}

// Close closes the file.
func (r *Reader) Close() error { return r.closer() }
