// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every record, copying each, up to the first error. It panics when a
// record's Text is not its fields joined by commas, or a Span not those it spans.
func readAll(rr *RecordReader) ([][]string, error) {
	var out [][]string
	for {
		fields, err := rr.Read()
		if err != nil {
			return out, err
		}
		if text := rr.Text(); text != nil {
			checkSpans(text, fields)
		}
		rec := make([]string, len(fields))
		for i, f := range fields {
			rec[i] = string(f)
		}
		out = append(out, rec)
	}
}

// checkSpans panics unless text, a record's line without quotes, is its fields joined by
// commas, none holding a comma, and every Span of them is theirs joined by commas: the same
// bytes of text, which for two subslices of text is the same length and capacity. A Span is
// set by its two ends alone, so each field is checked as a first and as a last against where
// the text's own commas put it: linear in the fields, where every pair would be cubic (a line
// of 3,000 commas, which the fuzzer found, took 23 s and was killed as a hang).
func checkSpans(text []byte, fields [][]byte) {
	if !bytes.Equal(text, bytes.Join(fields, []byte(","))) || bytes.ContainsAny(text, "\"\n") {
		panic(fmt.Sprintf("text %q of fields %q", text, fields))
	}
	starts, ends := make([]int, len(fields)), make([]int, len(fields))
	for i, at := 0, 0; i < len(fields); i++ {
		if bytes.IndexByte(fields[i], ',') >= 0 {
			panic(fmt.Sprintf("field %q of text %q holds a comma", fields[i], text))
		}
		starts[i], ends[i] = at, at+len(fields[i])
		at = ends[i] + 1
	}
	check := func(first, last int) {
		if got, want := Span(text, fields, first, last), text[starts[first]:ends[last]]; len(got) != len(want) || cap(got) != cap(want) {
			panic(fmt.Sprintf("Span(%d, %d) of %q is %q (cap %d), want %q (cap %d)", first, last, text, got, cap(got), want, cap(want)))
		}
	}
	last := len(fields) - 1
	for i := range fields {
		check(i, i)
		check(0, i)
		check(i, last)
	}
}

func TestRecordReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     [][]string
		err      error
		partial  int
	}{
		{"plain", "a,b,c\n1,,3\n", [][]string{{"a", "b", "c"}, {"1", "", "3"}}, io.EOF, 0},
		{"quoted comma", "\"a,b\",c\n", [][]string{{"a,b", "c"}}, io.EOF, 0},
		{"doubled quote", "\"say \"\"hi\"\"\",x\n", [][]string{{`say "hi"`, "x"}}, io.EOF, 0},
		{"newline in a field", "\"a\nb\",c\nd,e\n", [][]string{{"a\nb", "c"}, {"d", "e"}}, io.EOF, 0},
		{"empty quoted", "\"\",\"\"\n", [][]string{{"", ""}}, io.EOF, 0},
		{"trailing quoted", "x,\"y\"\n", [][]string{{"x", "y"}}, io.EOF, 0},
		{"CRLF", "a,b\r\n\"c\",d\r\n", [][]string{{"a", "b"}, {"c", "d"}}, io.EOF, 0},
		{"CR kept in a quoted field", "\"a\r\nb\"\n", [][]string{{"a\r\nb"}}, io.EOF, 0},
		{"empty lines skipped", "\na\n\n", [][]string{{"a"}}, io.EOF, 0},
		{"unfinished last row", "a,b\nc,d", [][]string{{"a", "b"}}, io.EOF, 3},
		{"unfinished quoted row", "a,b\n\"c\nd", [][]string{{"a", "b"}}, io.EOF, 4},
		{"bare quotes", "a\"b\"c,d\n", nil, ErrBareQuote, 0},
		// An odd quote opens a field that never closes over whole lines: damage, which costs
		// its line (the reader goes on at the next, below).
		{"bare quote", "a\"b,c\nd\n", nil, ErrQuote, 0},
		// Over an unfinished last line: the writer's row in progress, as above.
		{"quote open at an unfinished end", "a\"b,c\nd", nil, io.EOF, 7},
		{"text after closing quote", "\"a\"b,c\n", nil, ErrQuote, 0},
		{"long row", strings.Repeat("x", 1<<19) + ",y\n", [][]string{{strings.Repeat("x", 1<<19), "y"}}, io.EOF, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time, so that records cross every possible read boundary.
			rr := NewRecordReader(iotest.OneByteReader(strings.NewReader(tc.in)))
			got, err := readAll(rr)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("records %q, want %q", got, tc.want)
			}
			if rr.Partial() != tc.partial {
				t.Errorf("partial %d bytes, want %d", rr.Partial(), tc.partial)
			}
		})
	}
}

// TestRecordReaderGoesOnAfterAMalformedRecord checks that one broken row costs one row.
func TestRecordReaderGoesOnAfterAMalformedRecord(t *testing.T) {
	got, bad := readJoined(strings.NewReader("a,b\n\"x\"y,z\nc,d\n"))
	if bad != 1 || !reflect.DeepEqual(got, []string{"a|b", "c|d"}) {
		t.Errorf("got %q and %d malformed, want [a|b c|d] and 1", got, bad)
	}
}

// TestDamagedLineCostsThatLine: whatever a damaged line holds (an open quote, a stray one,
// too few fields), the rows after it are read, from the next line on; rows with quoted
// text spanning lines are read whole.
func TestDamagedLineCostsThatLine(t *testing.T) {
	rows := "1,\"two\nlines\",x\n2,b,c\n3,\"q,\"\"uoted\"\"\",c\n4,b,c\n"
	for _, tc := range []struct{ name, damage string }{
		{"unterminated quote", "garbage,\"unterminated\n"},
		{"quote closed by a later line's", "x,\"y\n"},
		{"text after a closing quote", "\"a\"b,c,d\n"},
		{"bare quote", "a\"b,c,d\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, bad := readJoined(strings.NewReader("h1,h2,h3\n" + tc.damage + rows))
			want := []string{"h1|h2|h3", "1|two\nlines|x", "2|b|c", "3|q,\"uoted\"|c", "4|b|c"}
			if bad != 1 || !reflect.DeepEqual(got, want) {
				t.Errorf("got %q and %d malformed, want %q and 1", got, bad, want)
			}
		})
	}
}

// TestRejectGivesBackTheFollowingLines: a record that parses but its reader finds damaged
// (here: the wrong number of fields) gives back the lines after its first.
func TestRejectGivesBackTheFollowingLines(t *testing.T) {
	// The damaged line's quote is closed by the next stray one, two lines on: the record
	// parses, into 2 fields of 3.
	in := "a,b,c\nbroken,\"x\n1,2,3\n\"\n4,5,6\n"
	rr := NewRecordReader(strings.NewReader(in))
	var got []string
	bad := 0
	for {
		fields, err := rr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(fields) != 3 {
			bad++
			if err == nil {
				rr.Reject()
			}
			continue
		}
		got = append(got, string(bytes.Join(fields, []byte("|"))))
	}
	if want := []string{"a|b|c", "1|2|3", "4|5|6"}; bad != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q and %d malformed, want %q and 2 (the broken line and the stray quote)", got, bad, want)
	}
}

// TestStrayQuoteCostsOneRecord checks that a quote a damaged file leaves open takes at most
// maxRecord with it, not the rest of the file (and all of it into memory).
func TestStrayQuoteCostsOneRecord(t *testing.T) {
	in := "a,\"b\n" + strings.Repeat("x,y\n", maxRecord/4+10) + "last,row\n"
	got, bad := readJoined(strings.NewReader(in))
	last := ""
	if len(got) > 0 {
		last = got[len(got)-1]
	}
	if bad != 1 || last != "last|row" {
		t.Errorf("%d malformed records, last %q; want 1 and the rows after it read, up to last|row", bad, last)
	}
}

// FuzzRecordReader holds the reader to encoding/csv: the same records, and an error (or an
// unfinished last record) where encoding/csv finds the quoting broken. Inputs with a CR are
// left out: encoding/csv turns CRLF inside a quoted field into LF, which changes the value,
// where this reader keeps it.
func FuzzRecordReader(f *testing.F) {
	for _, seed := range []string{
		"a,b,c\n", "\"a,b\",\"c\"\"d\"\n", "\"a\nb\",c\n\nd\n", "a\"b\n", "\"a\"b\n", "\"open\n",
		",,\n", "\"\"\n", "x,\"\"\"\"\n", "é,\xff\x00\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(in, "\r") {
			return
		}
		if !strings.HasSuffix(in, "\n") {
			in += "\n"
		}
		var want [][]string
		cr := csv.NewReader(strings.NewReader(in))
		cr.FieldsPerRecord = -1
		var wantErr error
		for {
			rec, err := cr.Read()
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, rec)
		}
		rr := NewRecordReader(strings.NewReader(in))
		got, err := readAll(rr)
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: records %q, encoding/csv reads %q then %v", in, got, want, wantErr)
		}
		clean := errors.Is(err, io.EOF) && rr.Partial() == 0
		if clean != errors.Is(wantErr, io.EOF) {
			t.Fatalf("%q: ends with %v (partial %d) where encoding/csv ends with %v", in, err, rr.Partial(), wantErr)
		}
	})
}

// readJoined reads every record of r, each as its fields joined by |, and counts the
// records the reader refused.
func readJoined(r io.Reader) (records []string, bad int) {
	rr := NewRecordReader(r)
	for {
		fields, err := rr.Read()
		if errors.Is(err, io.EOF) {
			return records, bad
		}
		if err != nil {
			bad++
			continue
		}
		records = append(records, string(bytes.Join(fields, []byte("|"))))
	}
}
