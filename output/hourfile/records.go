// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
)

// Errors for records that break RFC 4180. They are per record: the reader can go on with the
// next one.
var (
	ErrBareQuote = errors.New(`bare " in an unquoted field`)
	ErrQuote     = errors.New(`extraneous or missing " in a quoted field`)
)

// maxRecord bounds a record with a quoted field open across lines. threadcap's longest rows
// (a 4 KiB executable path, long stacks) are far shorter.
const maxRecord = 1 << 20

// RecordReader reads RFC 4180 records, much faster than encoding/csv: a record without a
// double quote, which is nearly every row threadcap writes, is split in place in the read
// buffer, with no copy and no allocation. Quoted fields hold commas, doubled quotes and
// newlines exactly as RFC 4180 says; a fuzz test holds it to encoding/csv.
//
// Unlike encoding/csv it keeps a CR inside a quoted field as it is (encoding/csv turns CRLF
// there into LF), and a last record with no newline is not returned but counted in Partial:
// in the current hour's file that is a row the writer is still writing.
//
// A damaged line costs that line only, when no row's text holds a newline. When rows' text
// does, a quote the damaged line leaves open can close on a following row's line into a
// record that parses and fits the header, and the rows after it can go on pairing up the
// wrong lines: no reader can tell those from rows by their syntax (FuzzReaderDamagedLine
// found such files); a caller that checks values (Reader.Reject) skips them. A record
// that does not parse (ErrBareQuote,
// ErrQuote), or that its reader rejects (Reject), gives back the lines after its first to
// be read again: a quote a damaged line leaves open would otherwise take the following
// rows into one field, up to the next stray quote or the end of the file.
type RecordReader struct {
	r       *bufio.Reader
	rec     []byte   // the current record when it cannot stay in the read buffer
	unq     []byte   // quoted fields, unquoted
	fields  [][]byte // the current record's fields
	text    []byte   // the current record's line when it holds no quote (Text)
	line    int64    // the line the current record starts on, from 1
	next    int64
	partial int // bytes of an unfinished last record
	// multi says the current record, in rec, spans lines.
	multi bool
	// pending are lines given back, read before r; pendingLine joins the last of them,
	// unfinished, to what r holds next.
	pending     []byte
	pendingLine []byte
	err         error // the first error of r, returned again once pending is read
}

func NewRecordReader(r io.Reader) *RecordReader {
	return &RecordReader{r: bufio.NewReaderSize(r, 1<<18), next: 1}
}

// Read returns the next record's fields, which stay valid until the next call. At the end
// it returns io.EOF; ErrBareQuote or ErrQuote for a malformed record, after which reading
// goes on at the record's second line; any other error is the underlying reader's, after
// which only the lines given back remain to be read.
func (rr *RecordReader) Read() ([][]byte, error) {
	for {
		rr.line = rr.next
		rr.multi = false
		rr.text = nil
		chunk, err := rr.readLine()
		if err == nil && bytes.IndexByte(chunk, '"') < 0 {
			rr.next++
			rec := trimEOL(chunk)
			if len(rec) == 0 {
				continue // encoding/csv skips empty lines too
			}
			rr.text = rec
			return rr.split(rec), nil
		}
		// The slow path: a record longer than the buffer, or one with quotes, which may go on
		// past this newline. An odd number of quotes so far means a quoted field is open.
		rr.rec = append(rr.rec[:0], chunk...)
		quotes := bytes.Count(chunk, []byte{'"'})
		for err == nil && quotes%2 == 1 || errors.Is(err, bufio.ErrBufferFull) {
			if err == nil {
				rr.next++
				rr.multi = true
				if len(rr.rec) > maxRecord {
					// A stray quote in a damaged file would otherwise make the rest of
					// the file one record, in memory.
					rr.giveBack()
					return nil, ErrQuote
				}
			}
			chunk, err = rr.readLine()
			rr.rec = append(rr.rec, chunk...)
			quotes += bytes.Count(chunk, []byte{'"'})
		}
		if err != nil {
			// A quote still open over whole lines is damage, not a row being written: the
			// writer ends every row, and a file it is writing ends inside one.
			if rr.multi && (!errors.Is(err, io.EOF) || rr.rec[len(rr.rec)-1] == '\n') {
				rr.giveBack()
				return nil, ErrQuote
			}
			rr.partial = len(rr.rec)
			return nil, err
		}
		rr.next++
		rec := trimEOL(rr.rec)
		if len(rec) == 0 {
			continue
		}
		fields, err := rr.parse(rec)
		if err != nil {
			rr.giveBack()
		}
		return fields, err
	}
}

// Reject says that the last record Read returned is damaged although it parsed (its
// fields do not fit the header, a value does not read): when it spans lines, the lines
// after its first are read again, as after a record that does not parse.
func (rr *RecordReader) Reject() { rr.giveBack() }

// giveBack makes the lines of the current record after its first the next ones read.
func (rr *RecordReader) giveBack() {
	if !rr.multi {
		return
	}
	rr.multi = false
	nl := bytes.IndexByte(rr.rec, '\n')
	// A new buffer: the fields of the record just returned may point into the old one.
	rest := append(append([]byte{}, rr.rec[nl+1:]...), rr.pending...)
	rr.pending = rest
	rr.next = rr.line + 1
}

// readLine returns the next line, newline included, from the lines given back, then from
// r; bufio.ErrBufferFull for a part of a line longer than r's buffer, as
// bufio.Reader.ReadSlice does.
func (rr *RecordReader) readLine() ([]byte, error) {
	if len(rr.pending) > 0 {
		if i := bytes.IndexByte(rr.pending, '\n'); i >= 0 {
			line := rr.pending[:i+1]
			rr.pending = rr.pending[i+1:]
			return line, nil
		}
		// The last line given back was unfinished: what r holds next ends it.
		rr.pendingLine = append(rr.pendingLine[:0], rr.pending...)
		rr.pending = nil
		chunk, err := rr.readSource()
		rr.pendingLine = append(rr.pendingLine, chunk...)
		return rr.pendingLine, err
	}
	return rr.readSource()
}

// readSource reads r up to a newline; r's first error other than bufio.ErrBufferFull is
// kept and returned again.
func (rr *RecordReader) readSource() ([]byte, error) {
	if rr.err != nil {
		return nil, rr.err
	}
	chunk, err := rr.r.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		rr.err = err
	}
	return chunk, err
}

// Resume makes a reader that reached the end of a file still being written read on from
// there once the file has grown: the unfinished last record (Partial) is read again, whole
// if the writer has finished it by then. After any other error it does nothing.
func (rr *RecordReader) Resume() {
	if !errors.Is(rr.err, io.EOF) {
		return
	}
	rr.err = nil
	if rr.partial > 0 {
		rr.pending = append(slices.Clone(rr.rec[:rr.partial]), rr.pending...)
		rr.next = rr.line
		rr.partial = 0
	}
}

// Text is the line of the last record read, without its newline, when it holds no double
// quote: the record's fields are then that text cut at its commas, each a subslice of it
// (see Span). Nil for a record with quotes, whose fields are unquoted copies.
func (rr *RecordReader) Text() []byte { return rr.text }

// Span is the text of fields first to last (first <= last) of a record whose line holds no
// quote, as RecordReader.Text and Read gave them: those fields joined by commas, a subslice
// of text, with no copy. A field is text[start:end], so its start is cap(text)-cap(field).
func Span(text []byte, fields [][]byte, first, last int) []byte {
	return text[cap(text)-cap(fields[first]) : cap(text)-cap(fields[last])+len(fields[last])]
}

// Line is the line the last record read starts on, for error messages.
func (rr *RecordReader) Line() int64 { return rr.line }

// Partial is the length of an unfinished last record found at the end, 0 if none.
func (rr *RecordReader) Partial() int { return rr.partial }

// trimEOL drops the newline ending a record, and the CR of a CRLF.
func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// split cuts a record without quotes at its commas. A loop over the bytes beats
// bytes.IndexByte here: fields are a few bytes long, shorter than its call costs.
func (rr *RecordReader) split(rec []byte) [][]byte {
	f := rr.fields[:0]
	start := 0
	for i, c := range rec {
		if c == ',' {
			f = append(f, rec[start:i])
			start = i + 1
		}
	}
	rr.fields = append(f, rec[start:])
	return rr.fields
}

// parse cuts a record that holds quotes into fields, unquoting them.
func (rr *RecordReader) parse(rec []byte) ([][]byte, error) {
	f := rr.fields[:0]
	// Unquoting only shortens, so unq never grows past this and earlier fields stay valid.
	if cap(rr.unq) < len(rec) {
		rr.unq = make([]byte, 0, len(rec))
	}
	unq := rr.unq[:0]
	for {
		if len(rec) == 0 || rec[0] != '"' {
			end := bytes.IndexByte(rec, ',')
			if end < 0 {
				end = len(rec)
			}
			if bytes.IndexByte(rec[:end], '"') >= 0 {
				return nil, ErrBareQuote
			}
			f = append(f, rec[:end])
			if end == len(rec) {
				rr.fields = f
				return f, nil
			}
			rec = rec[end+1:]
			continue
		}
		start := len(unq)
		rec = rec[1:]
		for {
			i := bytes.IndexByte(rec, '"')
			if i < 0 {
				return nil, ErrQuote
			}
			unq = append(unq, rec[:i]...)
			rec = rec[i+1:]
			if len(rec) > 0 && rec[0] == '"' {
				unq = append(unq, '"')
				rec = rec[1:]
				continue
			}
			break
		}
		f = append(f, unq[start:len(unq):len(unq)])
		if len(rec) == 0 {
			rr.fields = f
			return f, nil
		}
		if rec[0] != ',' {
			return nil, ErrQuote
		}
		rec = rec[1:]
	}
}
