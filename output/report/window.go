// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultLast is the window a report covers when it is given none: the recent past is what
// someone looking at a slow server right now wants.
const DefaultLast = 15 * time.Minute

// Window is the half-open interval [From, To) of tick times a report covers. Half-open, so
// that the reports for 03:10–03:15 and 03:15–03:20 never count the 03:15:00 tick twice.
type Window struct {
	From, To time.Time
}

// Contains reports whether a tick at t falls in the window.
func (w Window) Contains(t time.Time) bool {
	return !t.Before(w.From) && t.Before(w.To)
}

// Duration is the length of the window.
func (w Window) Duration() time.Duration { return w.To.Sub(w.From) }

// ParseWindow turns the --from, --to and --last flags into a window. now is the current
// time in the zone local times are read in. An empty flag is one not given: --last alone
// ends now, --from alone ends now, and no flag at all means the last DefaultLast.
func ParseWindow(from, to, last string, now time.Time) (Window, error) {
	if last != "" {
		if from != "" || to != "" {
			return Window{}, errors.New("--last cannot be combined with --from or --to; give one or the other")
		}
		d, err := time.ParseDuration(last)
		if err != nil || d <= 0 {
			return Window{}, fmt.Errorf("--last %q: give a positive duration such as 15m, 2h or 90s", last)
		}
		return Window{From: now.Add(-d), To: now}, nil
	}
	if from == "" {
		if to != "" {
			return Window{}, errors.New("--to needs --from; or use --last 15m")
		}
		return Window{From: now.Add(-DefaultLast), To: now}, nil
	}
	w := Window{To: now}
	var err error
	if w.From, err = ParseTime(from, now); err != nil {
		return Window{}, fmt.Errorf("--from: %w", err)
	}
	if to != "" {
		if w.To, err = ParseTime(to, now); err != nil {
			return Window{}, fmt.Errorf("--to: %w", err)
		}
	}
	if !w.From.Before(w.To) {
		return Window{}, fmt.Errorf("--from %s is not before --to %s", w.From.Format(time.RFC3339), w.To.Format(time.RFC3339))
	}
	return w, nil
}

// Layouts of a local date and time, with a space or a T between them, as people type them.
var localLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
}

// Layouts of a time of day alone, which means today.
var clockLayouts = []string{"15:04:05.999999999", "15:04"}

// ParseTime reads a time as someone investigating an incident types it: RFC 3339
// ("2026-11-21T03:10:00Z", "2026-11-21T04:10:00+01:00"), a local date and time
// ("2026-11-21 03:10", seconds optional), or a local time of day ("03:10"), which means
// that time today. Local means now's zone.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	loc := now.Location()
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range clockLayouts {
		if c, err := time.Parse(layout, s); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), loc), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time; write 2026-11-21 03:10, 03:10 (today) or RFC 3339 such as 2026-11-21T03:10:00Z", s)
}
