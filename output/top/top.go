// SPDX-License-Identifier: Apache-2.0

// Package top is threadcap's terminal view: active threads over time and the grouped
// table of output/report, live as the daemon appends to the current hour or over any past
// window, with keys to drill into a group, go back, regroup, search and look at a group's
// stacks and latencies. It renders what output/report returns and computes no number of
// its own, so that a number on screen is the one `threadcap report --format json` gives for
// the same window and filters.
package top

import (
	"context"
	"errors"
	"io"
	"runtime"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/threadcap/threadcap/output/report"
)

// DefaultLast is the window live mode shows: what the threads did in the last minute.
const DefaultLast = time.Minute

// Config is what `threadcap top` is told.
type Config struct {
	Dir   string
	By    []string
	Where []report.Match
	// Live follows the files as they grow, over the Last duration ending now; otherwise
	// Window is replayed.
	Live   bool
	Last   time.Duration
	Window report.Window
	// Clock is now: time.Now when nil. Tests move it across an hour.
	Clock func() time.Time
	// Explain turns an error the user can fix (a directory they may not read) into one
	// that says how; nil leaves errors as they are.
	Explain func(error) error
	// CPUs is marked on the chart: runtime.NumCPU() when 0.
	CPUs int
	// NoColor shows no colour (NO_COLOR is set): states are told apart by their marks.
	NoColor bool
	// Input and Output are the terminal: stdin and stdout when nil.
	Input  io.Reader
	Output io.Writer
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Explain == nil {
		c.Explain = func(err error) error { return err }
	}
	if c.CPUs == 0 {
		c.CPUs = runtime.NumCPU()
	}
	if c.Last <= 0 {
		c.Last = DefaultLast
	}
	return c
}

// Run shows the view until the user quits (q, Ctrl-C) or ctx ends; the terminal is given
// back as it was either way.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if cfg.Input != nil {
		opts = append(opts, tea.WithInput(cfg.Input))
	}
	if cfg.Output != nil {
		opts = append(opts, tea.WithOutput(cfg.Output))
	}
	if cfg.NoColor {
		// Bold and reverse video still mark the selection: NO_COLOR is about colour.
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(newModel(cfg, &reportSource{dir: cfg.Dir}), opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // asked to stop: not a failure
	}
	return err
}
