// SPDX-License-Identifier: Apache-2.0

// Command threadcap records, at a fixed rate, what every thread on this machine is doing,
// into hourly CSV files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/sirupsen/logrus"
)

const usage = `threadcap records what every thread is doing, N times a second, into hourly CSV files.

Usage:
  threadcap run [flags]    sample until SIGINT or SIGTERM (needs root, or CAP_BPF and CAP_PERFMON)
  threadcap version        print the version

Run "threadcap run -h" for the flags.
`

// Exit codes: 1 for a failure while running, 2 for a mistake in how threadcap was called.
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	switch os.Args[1] {
	case "run":
		cfg, err := parseRunFlags(os.Args[2:])
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "threadcap: %v\n", err)
			os.Exit(exitUsage)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := run(ctx, cfg); err != nil {
			logrus.WithError(err).Error("threadcap stopped")
			os.Exit(exitFailure)
		}
	case "version":
		fmt.Println("threadcap", version())
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "threadcap: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(exitUsage)
	}
}

// version is the module version the binary was built from, or the VCS revision.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return info.Main.Version + " " + s.Value
		}
	}
	return info.Main.Version
}
