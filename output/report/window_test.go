// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"
	"time"
)

// paris has a DST change, so local times are not a fixed offset from UTC.
var paris = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	return loc
}()

var now = time.Date(2026, 11, 21, 10, 40, 0, 0, paris)

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-11-21 03:10", time.Date(2026, 11, 21, 3, 10, 0, 0, paris)},
		{"2026-11-21 03:10:07", time.Date(2026, 11, 21, 3, 10, 7, 0, paris)},
		{"2026-11-21 03:10:07.25", time.Date(2026, 11, 21, 3, 10, 7, 250e6, paris)},
		{"2026-11-21T03:10", time.Date(2026, 11, 21, 3, 10, 0, 0, paris)},
		{" 03:10 ", time.Date(2026, 11, 21, 3, 10, 0, 0, paris)},
		{"03:10:07", time.Date(2026, 11, 21, 3, 10, 7, 0, paris)},
		{"2026-11-21T03:10:00Z", time.Date(2026, 11, 21, 3, 10, 0, 0, time.UTC)},
		{"2026-11-21T03:10:00.5+05:30", time.Date(2026, 11, 20, 21, 40, 0, 500e6, time.UTC)},
		// Summer time: the same wall clock is an hour earlier in UTC than in November.
		{"2026-07-01 03:10", time.Date(2026, 7, 1, 1, 10, 0, 0, time.UTC)},
	} {
		got, err := ParseTime(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "25:00", "2026-13-01 00:00", "03:10 PM", "1700000000"} {
		if got, err := ParseTime(bad, now); err == nil {
			t.Errorf("ParseTime(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseWindow(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 21, h, m, 0, 0, paris) }
	for _, tc := range []struct {
		from, to, last string
		want           Window
		err            string
	}{
		{"", "", "15m", Window{at(10, 25), now}, ""},
		{"", "", "2h", Window{at(8, 40), now}, ""},
		{"", "", "", Window{now.Add(-DefaultLast), now}, ""},
		{"03:10", "03:15", "", Window{at(3, 10), at(3, 15)}, ""},
		{"03:10", "", "", Window{at(3, 10), now}, ""},
		{"", "03:15", "", Window{}, "--to needs --from"},
		{"03:10", "", "5m", Window{}, "cannot be combined"},
		{"", "", "-5m", Window{}, "positive duration"},
		{"", "", "5", Window{}, "positive duration"},
		{"03:15", "03:10", "", Window{}, "is not before"},
		{"03:10", "3:1x", "", Window{}, "--to: \"3:1x\" is not a time"},
	} {
		got, err := ParseWindow(tc.from, tc.to, tc.last, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseWindow(%q, %q, %q) error %v, want one saying %q", tc.from, tc.to, tc.last, err, tc.err)
			}
			continue
		}
		if err != nil || !got.From.Equal(tc.want.From) || !got.To.Equal(tc.want.To) {
			t.Errorf("ParseWindow(%q, %q, %q) = %v, %v; want %v", tc.from, tc.to, tc.last, got, err, tc.want)
		}
	}
}

func TestWindowIsHalfOpen(t *testing.T) {
	w := Window{From: now, To: now.Add(time.Minute)}
	if !w.Contains(now) || w.Contains(now.Add(time.Minute)) || w.Contains(now.Add(-time.Nanosecond)) {
		t.Error("a window must hold its start and not its end")
	}
}

// FuzzParseTime checks that whatever ParseTime accepts reads back as the same instant once
// written in the local layout people type, so that the layouts never disagree.
func FuzzParseTime(f *testing.F) {
	for _, seed := range []string{"03:10", "2026-11-21 03:10:07.123", "2026-11-21T03:10:00+01:00",
		"2026-03-29 02:30", "23:59:59.999999999", "2026-11-21T03:10", "0000-01-01 00:00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			return
		}
		local := got.In(paris).Format("2006-01-02 15:04:05.999999999")
		again, err := ParseTime(local, now)
		if err != nil {
			t.Fatalf("%q parsed as %v, whose local form %q does not parse: %v", s, got, local, err)
		}
		// A wall-clock time repeated when DST ends may come back as the other instant.
		if d := again.Sub(got); d != 0 && d != time.Hour && d != -time.Hour {
			t.Fatalf("%q parsed as %v, but its local form %q as %v", s, got, local, again)
		}
	})
}
