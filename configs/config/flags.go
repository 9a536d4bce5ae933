// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/threadcap/threadcap/bpf"
)

// DefaultPath is read when it exists and --config does not name another file.
const DefaultPath = "/etc/threadcap/threadcap.yaml"

// UsageError is a mistake in how threadcap was called or configured: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Options is the command line: which config file, and the flags that override it. It is
// kept, so that SIGHUP can read the file again under the same flags.
type Options struct {
	// Path is the config file; "" for none.
	Path string
	// Explicit is set when --config was given: then a missing file is an error.
	Explicit  bool
	overrides []override
	pids      []int32
	processes []string
	cgroups   []string
}

// override is one flag's setting of one key.
type override struct {
	key, flag string
	set       func(*Config)
}

// Settings parses the flags of command cmd (run or check) and loads the config they
// name. -h gives flag.ErrHelp, which the caller turns into a plain exit.
func Settings(cmd string, args []string) (*Options, Config, error) {
	opts, err := ParseFlags(cmd, args, os.Stderr)
	if err != nil {
		return nil, Config{}, err
	}
	cfg, err := opts.Load()
	return opts, cfg, err
}

// ParseFlags parses the flags of command cmd (run or check).
func ParseFlags(cmd string, args []string, stderr io.Writer) (*Options, error) {
	o := &Options{Path: DefaultPath}
	fs := flag.NewFlagSet("threadcap "+cmd, flag.ContinueOnError)
	// The flag package would print each error and the whole usage; the caller prints the
	// error, and -h the usage.
	fs.SetOutput(io.Discard)
	fs.Func("config", "YAML config `file` (default "+DefaultPath+" when it exists; \"\" for none)", func(s string) error {
		o.Path, o.Explicit = s, true
		return nil
	})
	o.StringFlag(fs, "dir", "dir", "`directory` for the hour files (default $STATE_DIRECTORY, else ./data)", func(c *Config, v string) { c.Dir = v })
	fs.Func("hz", "sampling `rate` in samples a second: 100 down to 0.0003, one an hour (default 1)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		o.add("hz", "--hz", func(c *Config) { c.Hz = v })
		return nil
	})
	fs.BoolFunc("all", "a row for every thread at every tick, sleeping ones too", func(s string) error {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		o.add("all", "--all", func(c *Config) { c.All = v })
		return nil
	})
	o.StringFlag(fs, "syscalls", "syscalls", "syscall `mode`: full (hook every syscall), passive (read at switch-out) or tick (no hooks: every thread read at the tick) (default full)", func(c *Config, v string) { c.Syscalls = bpf.SyscallMode(v) })
	fs.Func("pid", "only these processes: `PID[,PID...]`; repeatable", func(s string) error {
		for _, f := range strings.Split(s, ",") {
			pid, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return fmt.Errorf("%q is not a pid", f)
			}
			o.pids = append(o.pids, int32(pid))
		}
		o.add("pids", "--pid", func(c *Config) { c.Pids = o.pids })
		return nil
	})
	fs.Func("process", "only processes with this `name` (comm); repeatable", func(s string) error {
		o.processes = append(o.processes, s)
		o.add("processes", "--process", func(c *Config) { c.Processes = o.processes })
		return nil
	})
	fs.Func("cgroup", "only processes in this cgroup v2 `path` or below, like /system.slice/mysql.service; repeatable", func(s string) error {
		o.cgroups = append(o.cgroups, s)
		o.add("cgroups", "--cgroup", func(c *Config) { c.Cgroups = o.cgroups })
		return nil
	})
	fs.Func("capacity", "`threads` tracked at once, 384 bytes of kernel memory each (default 65536)", func(s string) error {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not a number of threads", s)
		}
		o.add("capacity", "--capacity", func(c *Config) { c.Capacity = uint32(v) })
		return nil
	})
	o.StringFlag(fs, "log-level", "log.level", "`level`: debug, info, warn or error (default info)", func(c *Config, v string) { c.Log.Level = v })
	o.StringFlag(fs, "log-format", "log.format", "`format`: text or json (default text)", func(c *Config, v string) { c.Log.Format = v })
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: threadcap %s [flags]\n\nFlags override the config file:\n", cmd)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, UsageError{err}
	}
	if fs.NArg() > 0 {
		return nil, UsageError{fmt.Errorf("unexpected argument %q: settings are flags, like --hz 10", fs.Arg(0))}
	}
	return o, nil
}

func (o *Options) add(key, flag string, set func(*Config)) {
	o.overrides = append(o.overrides, override{key: key, flag: flag, set: set})
}

// StringFlag adds to fs a flag --name that sets key, a string, through set.
func (o *Options) StringFlag(fs *flag.FlagSet, name, key, usage string, set func(*Config, string)) {
	fs.Func(name, usage, func(s string) error {
		o.add(key, "--"+name, func(c *Config) { set(c, s) })
		return nil
	})
}

// Load builds the configuration: defaults, then the file, then the flags. All its errors
// are usageErrors.
func (o *Options) Load() (Config, error) {
	cfg := Default()
	var fileErr error
	if o.Path != "" {
		fileErr = ReadFile(o.Path, &cfg)
		if errors.Is(fileErr, os.ErrNotExist) && !o.Explicit {
			fileErr = nil // the default file is optional
		}
		var te typeErrors
		if fileErr != nil && !errors.As(fileErr, &te) {
			return cfg, UsageError{fileErr} // unreadable: nothing more to check
		}
	}
	for _, ov := range o.overrides {
		ov.set(&cfg)
		cfg.setOrigin(ov.key, ov.flag)
	}
	if err := errors.Join(fileErr, cfg.Validate()); err != nil {
		return cfg, UsageError{err}
	}
	return cfg, nil
}
