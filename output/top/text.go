// SPDX-License-Identifier: Apache-2.0

package top

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// clean makes a value from the files safe to print: thread names, cmdlines and paths are
// written by whoever runs a process, and a terminal obeys the escape sequences among them.
// Control characters and invalid UTF-8 are shown escaped, as Go quotes them; the rest is
// left as it is. It is the one place the terminal view escapes text.
func clean(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case !unicode.IsPrint(r) && r != ' ':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (!unicode.IsPrint(r) && r != ' ') {
			return false
		}
	}
	return true
}

// width is how many terminal cells s takes; s may hold the styles the view adds.
func width(s string) int { return ansi.StringWidth(s) }

// cut shortens s to at most w cells, ending it with "…" when something was cut.
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// fitTo cuts or pads s to exactly w cells.
func fitTo(s string, w int) string {
	s = cut(s, w)
	return s + strings.Repeat(" ", max(w-width(s), 0))
}

// rightTo right-aligns s in w cells.
func rightTo(s string, w int) string {
	s = cut(s, w)
	return strings.Repeat(" ", max(w-width(s), 0)) + s
}

// oneLine makes an error message one line: errors.Join puts one error per line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
