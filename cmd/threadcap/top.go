// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/output/top"
)

func topCommand(args []string) int {
	return topCommandAt(args, time.Now)
}

// topCommandAt is topCommand with the clock given: tests move it across an hour.
func topCommandAt(args []string, clock func() time.Time) int {
	cfg, err := parseTopFlags(args, clock(), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return exitCode(config.UsageError{Err: err})
	}
	if !term.IsTerminal(os.Stdin.Fd()) || !term.IsTerminal(os.Stdout.Fd()) {
		return exitCode(errors.New("top needs a terminal; for a script, use threadcap report --format json"))
	}
	cfg.Clock = clock
	cfg.NoColor = os.Getenv("NO_COLOR") != ""
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return exitCode(top.Run(ctx, cfg))
}

// parseTopFlags reads the flags of `threadcap top`: report's --dir, --config, --from,
// --to, --last and --where, and --by. Without --from it is live, over the last minute
// unless --last says otherwise.
func parseTopFlags(args []string, now time.Time, usage io.Writer) (top.Config, error) {
	cfg := top.Config{}
	opts := &config.Options{Path: config.DefaultPath}
	var from, to, last, by string
	fs := flag.NewFlagSet("threadcap top", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Func("config", "YAML config `file` whose dir to read (default "+config.DefaultPath+" when it exists; \"\" for none)", func(s string) error {
		opts.Path, opts.Explicit = s, true
		return nil
	})
	opts.StringFlag(fs, "dir", "dir", "`directory` of the hour files (default: dir in the config file, else ./data if it has some, else "+serviceDataDir+")",
		func(c *config.Config, v string) { c.Dir = v })
	fs.StringVar(&from, "from", "", "replay from: 2026-11-21 03:10, 03:10 (today), or RFC 3339; local time unless an offset is given")
	fs.StringVar(&to, "to", "", "replay to, excluded (default now)")
	fs.StringVar(&last, "last", "", "live: the window ending now that is shown, such as 5m (default 1m)")
	fs.StringVar(&by, "by", "state,syscall", "columns to group by, comma-separated")
	fs.Func("where", "keep rows whose column=value (repeatable: values of one column are alternatives)", func(s string) error {
		m, err := report.ParseMatch(s)
		cfg.Where = append(cfg.Where, m)
		return err
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	cfg.Live = from == ""
	if cfg.Live && last == "" && to == "" {
		last = top.DefaultLast.String()
	}
	w, err := report.ParseWindow(from, to, last, now)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Window, cfg.Last = w, w.Duration()
	cfg.By = strings.Split(by, ",")
	if err == nil {
		errs = append(errs, report.Query{Window: w, By: cfg.By, Where: cfg.Where}.Validate())
	}
	file, err := opts.Load()
	errs = append(errs, err)
	cfg.Dir = file.Dir
	if !file.IsSet("dir") {
		cfg.Dir = defaultReportDir()
	}
	rd := readers{ConfigPath: opts.Path, Group: file.Output.Group}
	cfg.Explain = rd.explain
	return cfg, errors.Join(errs...)
}
