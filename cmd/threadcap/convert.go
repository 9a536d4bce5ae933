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
	"syscall"
	"time"

	"github.com/threadcap/threadcap/configs/config"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
)

// convertConfig is everything `threadcap convert` is told.
type convertConfig struct {
	Dir  string // where the CSV hours are
	Out  string // the directory whose Parquet tree receives them
	Host string
	// Files are the permissions of what is created.
	Files parquet.FileOptions
}

func convertCommand(args []string) int {
	cfg, err := parseConvertFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return exitCode(config.UsageError{Err: err})
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return exitCode(runConvert(ctx, cfg, time.Now(), os.Stdout))
}

// parseConvertFlags reads the flags of `threadcap convert`, and the config file as `run`
// reads it, for dir, host and the file permissions.
func parseConvertFlags(args []string, usage io.Writer) (convertConfig, error) {
	var cfg convertConfig
	opts := &config.Options{Path: config.DefaultPath}
	fs := flag.NewFlagSet("threadcap convert", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Func("config", "YAML config `file` whose dir, host and output modes to use (default "+config.DefaultPath+" when it exists; \"\" for none)", func(s string) error {
		opts.Path, opts.Explicit = s, true
		return nil
	})
	opts.StringFlag(fs, "dir", "dir", "`directory` of the CSV hour files (default: dir in the config file)",
		func(c *config.Config, v string) { c.Dir = v })
	opts.StringFlag(fs, "host", "host", "`name` of the host the hours were recorded on (default: host in the config file, else this host's name)",
		func(c *config.Config, v string) { c.Host = v })
	fs.StringVar(&cfg.Out, "out", "", "`directory` whose parquet/ tree receives the files (default: --dir)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	file, err := opts.Load()
	if err != nil {
		return cfg, err
	}
	w := file.Writer(nil)
	cfg.Dir = file.Dir
	if cfg.Out == "" {
		cfg.Out = cfg.Dir
	}
	var errs []error
	if cfg.Host, err = w.HostName(); err != nil {
		errs = append(errs, fmt.Errorf("%w; or give --host", err))
	}
	if cfg.Files, err = w.FileOptions(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// runConvert writes every closed CSV hour in cfg.Dir that has no Parquet file yet as
// Parquet, printing a line for each; now says which hour is still open. The CSV files are
// left as they are. It fails when any hour could not be converted, after trying them all.
func runConvert(ctx context.Context, cfg convertConfig, now time.Time, out io.Writer) error {
	files, err := hourfile.List(cfg.Dir)
	if err != nil {
		return fmt.Errorf("listing hour files: %w", err)
	}
	current := now.UTC().Truncate(time.Hour)
	var converted, skipped, failed int
	for _, f := range files {
		if !f.Readable() || !f.Hour.Before(current) {
			continue // Parquet already, set aside, or the hour being written
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dst, st, err := parquet.ConvertHour(ctx, cfg.Out, f, cfg.Host, cfg.Files)
		switch {
		case errors.Is(err, parquet.ErrExists):
			skipped++
		case err != nil:
			failed++
			fmt.Fprintf(out, "%s: %v\n", f.Path, err)
		default:
			converted++
			fmt.Fprintf(out, "%s -> %s: %d rows", f.Path, dst, st.Rows)
			if st.Malformed > 0 {
				fmt.Fprintf(out, ", %d malformed rows left out", st.Malformed)
			}
			fmt.Fprintln(out)
		}
	}
	fmt.Fprintf(out, "%d hour files converted, %d already had a Parquet file, %d failed\n", converted, skipped, failed)
	if failed > 0 {
		return fmt.Errorf("%d hour files could not be converted", failed)
	}
	return nil
}
