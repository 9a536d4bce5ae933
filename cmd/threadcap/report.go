// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/output/report/html"
)

// Where the files are looked for when neither --dir nor the config file's dir says: ./data,
// where `threadcap run` writes by default, when it holds hour files (or cannot be read, so
// that the error names it); otherwise the service's directory.
const (
	localDataDir   = "./data"
	serviceDataDir = "/var/lib/threadcap"
)

// reportConfig is everything `threadcap report` is told.
type reportConfig struct {
	Dir    string
	Query  report.Query
	Format string
	// Folded prints folded stacks instead of a breakdown; with Profile, those of the CPU
	// profile's samples.
	Folded, Profile bool
	// Latency prints, per span, percentiles and the split of wall time, from the spans
	// files, and per disk and operation the percentiles of time queued and at the device,
	// from the io files, instead of a breakdown.
	Latency bool
	// HTML is where to write the page of the window (- for stdout), instead of a breakdown.
	HTML string
	// Readers is who may read the files: the config file and its output.group, for the
	// advice when they cannot be read.
	Readers readers
}

// readers names the group that may read the hour files, and the config file that sets it.
type readers struct {
	ConfigPath string
	Group      string
}

func reportCommand(args []string) int {
	cfg, err := parseReportFlags(args, time.Now(), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return exitCode(config.UsageError{Err: err})
	}
	return exitCode(runReport(cfg, os.Stdout))
}

// parseReportFlags reads the flags of `threadcap report`, writing help and flag errors to
// usage; now is what --last and times of day count from.
func parseReportFlags(args []string, now time.Time, usage io.Writer) (reportConfig, error) {
	cfg := reportConfig{Query: report.Query{Top: 20}}
	// The config file is read as `threadcap run` reads it, for its dir: what run writes to
	// is where report looks. --dir wins over it.
	opts := &config.Options{Path: config.DefaultPath}
	var from, to, last, by, timeline, format string
	fs := flag.NewFlagSet("threadcap report", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Func("config", "YAML config `file` whose dir to read (default "+config.DefaultPath+" when it exists; \"\" for none)", func(s string) error {
		opts.Path, opts.Explicit = s, true
		return nil
	})
	opts.StringFlag(fs, "dir", "dir", "`directory` of the hour files (default: dir in the config file, else ./data if it has some, else "+serviceDataDir+")",
		func(c *config.Config, v string) { c.Dir = v })
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
	fs.BoolVar(&cfg.Latency, "latency", false, "per span (spans in the config): count, p50/p90/p99 of wall and on-CPU time, and the average split of wall time; per disk and operation (io on): requests and p50/p90/p99 of time queued and at the device (table and json; csv has the spans)")
	fs.StringVar(&cfg.HTML, "html", "", "write one self-contained HTML `file` (- for stdout) of the window: active threads over time, top activity with drill-down, latency, stacks and threads, narrowed by selecting and clicking, offline")
	fs.BoolVar(&cfg.Folded, "folded", false, "folded stacks of the rows that have one (process;user frames;kernel frames count), for flame graph tools")
	fs.BoolVar(&cfg.Profile, "profile", false, "with --folded: the CPU profile's samples (profile.hz in the config) instead of the rows' stacks: a CPU flame graph; --where on pid, tid, process or thread")
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
	if n := countTrue(cfg.Folded, timeline != "", cfg.Latency, cfg.HTML != ""); n > 1 {
		errs = append(errs, errors.New("--folded, --timeline, --latency and --html ask for different reports; give one"))
	}
	if cfg.Profile && !cfg.Folded {
		errs = append(errs, errors.New("--profile is a kind of --folded report: give --folded --profile"))
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.Query.Validate())
	}
	file, err := opts.Load()
	errs = append(errs, err)
	cfg.Dir = file.Dir
	if !file.IsSet("dir") {
		cfg.Dir = defaultReportDir()
	}
	cfg.Readers = readers{ConfigPath: opts.Path, Group: file.Output.Group}
	return cfg, errors.Join(errs...)
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// defaultReportDir is ./data when it holds hour files, or when it cannot be read: then the
// error that follows names it, rather than the service's directory, which may not exist.
func defaultReportDir() string {
	files, err := report.ListHourFiles(localDataDir)
	if len(files) > 0 || errors.Is(err, fs.ErrPermission) {
		return localDataDir
	}
	return serviceDataDir
}

// runReport reads the files and writes the report to out. It needs no privilege beyond
// reading the files.
func runReport(cfg reportConfig, out io.Writer) error {
	if cfg.HTML != "" {
		return cfg.Readers.explain(writeHTML(cfg, out))
	}
	if cfg.Latency {
		lat, err := report.Latency(cfg.Dir, cfg.Query.Window)
		if err != nil {
			return cfg.Readers.explain(err)
		}
		return report.RenderLatency(out, lat, cfg.Query.Window, cfg.Format)
	}
	if cfg.Folded && cfg.Profile {
		stacks, _, err := report.FoldedProfile(cfg.Dir, cfg.Query)
		if err != nil {
			return cfg.Readers.explain(err)
		}
		return report.RenderFolded(out, stacks)
	}
	if cfg.Folded {
		stacks, _, err := report.Folded(cfg.Dir, cfg.Query)
		if err != nil {
			return cfg.Readers.explain(err)
		}
		return report.RenderFolded(out, stacks)
	}
	r, err := report.Run(cfg.Dir, cfg.Query)
	if err != nil {
		return cfg.Readers.explain(err)
	}
	return report.Render(out, r, cfg.Format, terminalWidth(out))
}

// writeHTML writes the page to cfg.HTML, or to out for -. A file is written whole or not
// at all: the page goes to a temporary file renamed over it.
func writeHTML(cfg reportConfig, out io.Writer) error {
	if cfg.HTML == "-" {
		return html.Write(out, cfg.Dir, cfg.Query, html.Options{})
	}
	f, err := os.CreateTemp(filepath.Dir(cfg.HTML), "."+filepath.Base(cfg.HTML)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", cfg.HTML, err)
	}
	defer os.Remove(f.Name())
	err = html.Write(f, cfg.Dir, cfg.Query, html.Options{})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", cfg.HTML, cerr)
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), cfg.HTML)
	}
	return err
}

// explain says, of an error that is a permission problem, who may read the files and how
// to become one of them. Other errors are returned as they are.
func (r readers) explain(err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	path := r.ConfigPath
	if path == "" {
		path = config.DefaultPath
	}
	if r.Group == "" {
		return fmt.Errorf("%w: this user may not read threadcap's files. To let it, set output.group in %s "+
			"to a group of readers, restart threadcap, and add the user to that group (usermod -aG GROUP $USER, "+
			"then log in again); or give a directory this user can read with --dir", err, path)
	}
	return fmt.Errorf("%w: this user may not read threadcap's files, which the group %s may read "+
		"(output.group in %s): add the user to it (usermod -aG %s $USER, then log in again), "+
		"or give a directory this user can read with --dir", err, r.Group, path, r.Group)
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
