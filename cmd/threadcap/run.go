// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/sampler"
)

// runConfig is everything `threadcap run` is told.
type runConfig struct {
	Dir       string
	Hz        float64
	All       bool
	Syscalls  string
	Pids      []int32
	Capacity  uint
	LogLevel  string
	LogFormat string
}

func parseRunFlags(args []string) (runConfig, error) {
	cfg := runConfig{Dir: "./data", Hz: 1, Syscalls: string(bpf.SyscallsFull), Capacity: bpf.DefaultCapacity,
		LogLevel: "info", LogFormat: "text"}
	fs := flag.NewFlagSet("threadcap run", flag.ContinueOnError)
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "directory for the hourly CSV files")
	fs.Float64Var(&cfg.Hz, "hz", cfg.Hz, "samples per second (0.0003 to 100)")
	fs.BoolVar(&cfg.All, "all", cfg.All, "a row for every thread at every tick, sleeping ones too")
	fs.StringVar(&cfg.Syscalls, "syscalls", cfg.Syscalls, "syscall tracking: full (hook every syscall) or passive (read them at switch-out)")
	fs.Func("pid", "only these processes (comma-separated pids; repeatable)", func(s string) error {
		for _, f := range strings.Split(s, ",") {
			pid, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || pid <= 0 {
				return fmt.Errorf("%q is not a pid", f)
			}
			cfg.Pids = append(cfg.Pids, int32(pid))
		}
		return nil
	})
	fs.UintVar(&cfg.Capacity, "capacity", cfg.Capacity, "threads tracked at once (192 bytes of kernel memory each)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "text or json")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.validate()
}

// validate reports every mistake at once.
func (c runConfig) validate() error {
	var errs []error
	if c.Hz <= 0 || c.Hz > 100 {
		errs = append(errs, fmt.Errorf("--hz %v: use a rate above 0 and at most 100", c.Hz))
	}
	if _, err := bpf.ParseSyscallMode(c.Syscalls); err != nil {
		errs = append(errs, fmt.Errorf("--syscalls: %w", err))
	}
	if c.Capacity == 0 || c.Capacity > 1<<22 {
		errs = append(errs, fmt.Errorf("--capacity %d: use 1 to %d threads", c.Capacity, 1<<22))
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: use text or json", c.LogFormat))
	}
	return errors.Join(errs...)
}

func setupLogging(c runConfig) {
	level, _ := logrus.ParseLevel(c.LogLevel)
	logrus.SetLevel(level)
	if c.LogFormat == "json" {
		logrus.SetFormatter(&logrus.JSONFormatter{})
	}
}

// run samples until ctx ends, then flushes the current file and detaches everything.
func run(ctx context.Context, c runConfig) (err error) {
	setupLogging(c)
	log := logrus.WithField("component", "threadcap")
	log.WithFields(logrus.Fields{
		"dir": c.Dir, "hz": c.Hz, "all": c.All, "syscalls": c.Syscalls, "pids": c.Pids, "capacity": c.Capacity,
	}).Info("starting")

	mode, _ := bpf.ParseSyscallMode(c.Syscalls)
	tracker, err := bpf.Open(bpf.Config{Capacity: uint32(c.Capacity), Syscalls: mode})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tracker.Close()) }()

	writer, err := output.New(output.Config{Dir: c.Dir, Log: logrus.WithField("component", "output")})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, writer.Close()) }()

	s, err := sampler.New(sampler.Config{
		Interval: time.Duration(float64(time.Second) / c.Hz),
		Filter:   sampler.Filter{All: c.All, Pids: c.Pids},
		Self:     int32(os.Getpid()),
		Mono:     bpf.Now, Wall: time.Now,
		Log: logrus.WithField("component", "sampler"),
	}, tracker, writer)
	if err != nil {
		return err
	}
	if err := s.Seed(); err != nil {
		return err
	}
	err = s.Run(ctx)
	st := s.Stats()
	log.WithFields(logrus.Fields{"ticks": st.Ticks, "rows": st.Rows, "skipped_ticks": st.SkippedTicks}).Info("stopped")
	return err
}
