// SPDX-License-Identifier: Apache-2.0

// Command threadcap records, at a fixed rate, what every thread on this machine is doing,
// into hourly CSV files.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/threadcap/threadcap/configs/config"
)

const usage = `threadcap records what every thread is doing, N times a second, into hourly CSV files.

Usage:
  threadcap run [flags]    sample until SIGINT or SIGTERM (needs root, or CAP_BPF and CAP_PERFMON);
                           SIGHUP reloads the config file
  threadcap check [flags]  tell whether this kernel and these privileges can run threadcap
  threadcap report [flags] what threads were doing in a time window, from the files (no root needed)
  threadcap top [flags]    the same in a terminal view: live as the files grow, or over a past window
  threadcap convert [flags] write closed CSV hours, of any schema version, as Parquet files
  threadcap version        print the version

Settings come from defaults, then the config file (` + config.DefaultPath + `
when it exists, or --config FILE), then flags. Run "threadcap run -h" for the flags.
`

// Exit codes: 1 for a failure while running, 2 for a mistake in how threadcap was called
// or configured.
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "run":
		os.Exit(runCommand(args))
	case "check":
		os.Exit(checkCommand(args))
	case "report":
		os.Exit(reportCommand(args))
	case "top":
		os.Exit(topCommand(args))
	case "convert":
		os.Exit(convertCommand(args))
	case "version":
		fmt.Println("threadcap", version())
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "threadcap: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(exitUsage)
	}
}

// exitCode prints err, if any, and says how threadcap exits for it.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if !errors.As(err, new(config.UsageError)) {
		fmt.Fprintf(os.Stderr, "threadcap: %v\n", err)
		return exitFailure
	}
	// errors.Join puts one mistake per line: list them under one heading.
	if lines := strings.Split(err.Error(), "\n"); len(lines) > 1 {
		fmt.Fprintf(os.Stderr, "threadcap: %d mistakes:\n  %s\n", len(lines), strings.Join(lines, "\n  "))
	} else {
		fmt.Fprintf(os.Stderr, "threadcap: %v\n", err)
	}
	return exitUsage
}

// version is the module version the binary was built from; for a build of a checkout
// without one, "(devel)", the commit, its time and whether the tree had changes.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown: built without module information"
	}
	return versionOf(info)
}

// versionOf is version's answer from the build information.
func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v // a tag or pseudo-version: it names the commit, and +dirty a changed tree
	}
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	if rev == "" {
		return "(devel), built without version control information"
	}
	v = "(devel) revision " + rev
	if t := vcs["vcs.time"]; t != "" {
		v += " of " + t
	}
	if vcs["vcs.modified"] == "true" {
		v += ", with uncommitted changes"
	}
	return v
}
