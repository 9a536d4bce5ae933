// SPDX-License-Identifier: Apache-2.0

package hourfile

import "unicode/utf8"

// TimeLayout is the times in rows: RFC 3339 with exactly six fractional digits and a
// numeric offset. A fixed width keeps rows aligned for the eye and sortable as text;
// "-07:00" rather than "Z07:00" writes +00:00 instead of Z on UTC hosts, so every row has
// the same shape.
const TimeLayout = "2006-01-02T15:04:05.000000-07:00"

// TextNote is AppendText's rules as the schema tells readers of a text column.
const TextNote = " Text: a leading ' is added when the value starts with = + - @ tab or '; " +
	"control characters but tab and newline show as symbols (ESC as ␛), invalid UTF-8 as �."

// plain marks the bytes a text field may hold as they are: printable ASCII other than the
// comma and the double quote. Everything else takes the slow path, which quotes or replaces.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != ',' && c != '"'
	}
	return t
}()

// The Unicode block "Control Pictures" has a visible symbol for each C0 control, at
// U+2400 plus its code, and one for DEL.
const (
	controlPictures = '\u2400'
	pictureDEL      = '\u2421'
)

// AppendText writes one text field. It does not allocate.
//
// Text fields are written so that every row reads back with any RFC 4180 reader and is safe
// to open in a spreadsheet:
//   - a field is quoted only when it must be (comma, double quote, LF, or a leading or
//     trailing space), so that grep for a plain name matches the raw file;
//   - control characters other than tab and LF become their Unicode control pictures (ESC
//     is written ␛, CR ␍, NUL ␀, DEL ␡): a DBA who cats a file runs no escape sequence a
//     thread chose for its name, a CR cannot hide the start of a line, and a NUL never
//     appears, as it marks the zero-filled tail a crash can leave (see output.completeRows);
//   - invalid UTF-8 and the C1 controls U+0080-U+009F (which some terminals also obey)
//     become U+FFFD, because DuckDB rejects invalid UTF-8 and C1 has no control pictures;
//   - a value starting with = + - @ or tab gets a leading ', which spreadsheets take as
//     "this is text" instead of running it as a formula. A value that itself starts with '
//     gets one too, so the rule reverses exactly: drop one leading ' if there is one
//     (Unguard). grep still finds such a value by any part of it.
func AppendText(dst []byte, v string) []byte {
	if v == "" {
		return dst
	}
	formula := NeedsGuard(v[0])
	if !formula && v[0] != ' ' && v[len(v)-1] != ' ' && allPlain(v) {
		return append(dst, v...)
	}
	quote := v[0] == ' ' || v[len(v)-1] == ' ' || needsQuotes(v)
	if quote {
		dst = append(dst, '"')
	}
	if formula {
		dst = append(dst, guard)
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				dst = append(dst, '"', '"')
			case c == '\t' || c == '\n':
				dst = append(dst, c)
			case c < 0x20:
				dst = utf8.AppendRune(dst, controlPictures+rune(c))
			case c == 0x7f:
				dst = utf8.AppendRune(dst, pictureDEL)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if (r == utf8.RuneError && size == 1) || (r >= 0x80 && r < 0xa0) {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, v[i:i+size]...)
		}
		i += size
	}
	if quote {
		dst = append(dst, '"')
	}
	return dst
}

// guard is the formula guard: a leading ' that spreadsheets take as "this is text".
const guard = '\''

// NeedsGuard reports whether a value starting with c would be run as a formula by Excel or
// LibreOffice (the OWASP "CSV injection" list, less CR, which never reaches the file), or
// starts with the guard itself.
func NeedsGuard(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', guard:
		return true
	}
	return false
}

// Guard applies the formula guard of AppendText to a value, for a file other than an hour
// file (a report) that a spreadsheet may open: a process named "=cmd" shows as text instead
// of running.
func Guard(v string) string {
	if v != "" && NeedsGuard(v[0]) {
		return string(guard) + v
	}
	return v
}

// Unguard is a text field as its writer meant it: without the leading ' that guards it
// against spreadsheet formulas.
func Unguard(v []byte) []byte {
	if len(v) > 0 && v[0] == guard {
		return v[1:]
	}
	return v
}

func allPlain(v string) bool {
	for i := 0; i < len(v); i++ {
		if !plain[v[i]] {
			return false
		}
	}
	return true
}

func needsQuotes(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case ',', '"', '\n':
			return true
		}
	}
	return false
}
