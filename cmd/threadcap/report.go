// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/report"
)

// Where the files are looked for when --dir is not given: ./data, where `threadcap run`
// writes by default, when it holds hour files; otherwise the service's directory.
const (
	localDataDir   = "./data"
	serviceDataDir = "/var/lib/threadcap"
)

// reportConfig is everything `threadcap report` is told.
type reportConfig struct {
	Dir    string
	Query  report.Query
	Format string
	// Folded prints folded stacks instead of a breakdown.
	Folded bool
}

func reportCommand(args []string) int {
	cfg, err := parseReportFlags(args, time.Now(), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return exitCode(usageError{err})
	}
	return exitCode(runReport(cfg, os.Stdout))
}

// parseReportFlags reads the flags of `threadcap report`, writing help and flag errors to
// usage; now is what --last and times of day count from.
func parseReportFlags(args []string, now time.Time, usage io.Writer) (reportConfig, error) {
	cfg := reportConfig{Query: report.Query{Top: 20}}
	var from, to, last, by, timeline, format string
	fs := flag.NewFlagSet("threadcap report", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&cfg.Dir, "dir", "", "directory of the hour files (default ./data if it has some, else "+serviceDataDir+")")
	fs.StringVar(&from, "from", "", "start: 2026-11-21 03:10, 03:10 (today), or RFC 3339; local time unless an offset is given")
	fs.StringVar(&to, "to", "", "end, excluded (default now)")
	fs.StringVar(&last, "last", "", "the window ending now, such as 15m or 2h (default 15m when --from is not given)")
	fs.StringVar(&by, "by", "state,syscall", "columns to group by, comma-separated")
	fs.Func("where", "keep rows whose column=value (repeatable: values of one column are alternatives)", func(s string) error {
		m, err := report.ParseMatch(s)
		cfg.Query.Where = append(cfg.Query.Where, m)
		return err
	})
	fs.IntVar(&cfg.Query.Top, "top", cfg.Query.Top, "groups to list (0: all)")
	fs.StringVar(&timeline, "timeline", "", "minute or second: active threads per minute or second by state, instead of groups")
	fs.StringVar(&format, "format", report.FormatTable, "table, csv or json")
	fs.BoolVar(&cfg.Folded, "folded", false, "folded stacks of the rows that have one (process;user frames;kernel frames count), for flame graph tools")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	var err error
	if cfg.Query.Window, err = report.ParseWindow(from, to, last, now); err != nil {
		errs = append(errs, err)
	}
	if by != "" {
		cfg.Query.By = strings.Split(by, ",")
	}
	if timeline != "" {
		if cfg.Query.Step, err = report.ParseStep(timeline); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.Format, err = report.ParseFormat(format); err != nil {
		errs = append(errs, err)
	}
	if cfg.Folded && timeline != "" {
		errs = append(errs, errors.New("--folded and --timeline ask for different reports; give one"))
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.Query.Validate())
	}
	if cfg.Dir == "" {
		cfg.Dir = serviceDataDir
		if report.HasHourFiles(localDataDir) {
			cfg.Dir = localDataDir
		}
	}
	return cfg, errors.Join(errs...)
}

// runReport reads the files and writes the report to out. It needs no privilege beyond
// reading the files.
func runReport(cfg reportConfig, out io.Writer) error {
	if cfg.Folded {
		stacks, _, err := report.Folded(cfg.Dir, cfg.Query)
		if err != nil {
			return err
		}
		return report.RenderFolded(out, stacks)
	}
	r, err := report.Run(cfg.Dir, cfg.Query)
	if err != nil {
		return err
	}
	return report.Render(out, r, cfg.Format, terminalWidth(out))
}

// terminalWidth is the width of the terminal out is, or 0 when it is not one.
func terminalWidth(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
