// SPDX-License-Identifier: Apache-2.0

// Package config is every setting of threadcap: the types, their defaults, the YAML file
// (documented by ../threadcap.yaml, next to this package), the flags that override it,
// validation, and which settings a reload can change.
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/metrics"
	"github.com/threadcap/threadcap/output/ship"
	"github.com/threadcap/threadcap/sampler"
)

// Config is every setting of threadcap, as the YAML file spells it. It starts from
// Default, is overlaid by the file, then by the flags.
type Config struct {
	// Dir holds the hour files.
	Dir string `yaml:"dir"`
	// Hz is the number of samples a second.
	Hz       float64         `yaml:"hz"`
	All      bool            `yaml:"all"`
	Syscalls bpf.SyscallMode `yaml:"syscalls"`
	// Pids, Processes and Cgroups, when set, keep only the threads of matching processes.
	Pids      []int32       `yaml:"pids"`
	Processes []string      `yaml:"processes"`
	Cgroups   []string      `yaml:"cgroups"`
	Capacity  uint32        `yaml:"capacity"`
	Columns   ColumnsConfig `yaml:"columns"`
	Stacks    StacksConfig  `yaml:"stacks"`
	// IO tracks block requests: the io_ columns and the hourly io file.
	IO      bool          `yaml:"io"`
	Log     LogConfig     `yaml:"log"`
	Output  OutputConfig  `yaml:"output"`
	Metrics MetricsConfig `yaml:"metrics"`
	// Host names this host in Parquet files and their paths; the host name when empty.
	Host  string       `yaml:"host"`
	Ship  ShipConfig   `yaml:"ship"`
	Spans []SpanConfig `yaml:"spans"`
	// Profile is the CPU profile, off by default.
	Profile ProfileConfig `yaml:"profile"`

	// origins says where a key's value came from ("FILE:LINE" or "--flag"), so that an
	// error points at what to fix. Keys left at their default are absent.
	origins map[string]string
	// undecoded are keys whose value in the file was unreadable: already reported, and
	// left at their default, so Validate does not report them again.
	undecoded map[string]bool
}

// ColumnsConfig turns off the columns that cost a /proc read: a machine with very many
// short-lived cgroups or descriptors may not want to pay for them.
type ColumnsConfig struct {
	Cgroup   bool `yaml:"cgroup"`
	FdTarget bool `yaml:"fd_target"`
}

// StacksConfig is which stacks the kernel side captures, and how many distinct ones it
// keeps.
type StacksConfig struct {
	Kernel  bpf.StackMode `yaml:"kernel"`
	User    bool          `yaml:"user"`
	Entries uint32        `yaml:"entries"`
}

// ProfileConfig is the CPU profile: every CPU sampled Hz times a second, the running
// thread's stacks counted per minute into the hourly profile file. Hz 0 turns it off.
type ProfileConfig struct {
	Hz int `yaml:"hz"`
}

// LogConfig is how threadcap logs.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// OutputConfig is how the hour files are written and kept.
type OutputConfig struct {
	Compress      string   `yaml:"compress"`
	Format        string   `yaml:"format"`
	FileMode      FileMode `yaml:"file_mode"`
	DirMode       FileMode `yaml:"dir_mode"`
	Group         string   `yaml:"group"`
	MaxAge        Duration `yaml:"max_age"`
	MaxBytes      Size     `yaml:"max_bytes"`
	MinFreeBytes  Size     `yaml:"min_free_bytes"`
	FsyncInterval Duration `yaml:"fsync_interval"`
}

// MetricsConfig is the Prometheus endpoint, off unless Listen is set.
type MetricsConfig struct {
	// Listen is host:port of the endpoint; "" opens no socket.
	Listen string `yaml:"listen"`
	// TopProcesses is how many processes have a label of their own in the activity
	// metrics.
	TopProcesses int `yaml:"top_processes"`
}

// ShipConfig is where closed Parquet hours are uploaded; off while Endpoint is empty.
type ShipConfig struct {
	Endpoint        string   `yaml:"endpoint"`
	Bucket          string   `yaml:"bucket"`
	Prefix          string   `yaml:"prefix"`
	Region          string   `yaml:"region"`
	TLS             bool     `yaml:"tls"`
	CredentialsFile string   `yaml:"credentials_file"`
	Interval        Duration `yaml:"interval"`
}

// Limits of the settings.
const (
	maxCapacity = 1 << 22
	// maxCommLen is the longest name the kernel keeps for a process (TASK_COMM_LEN - 1): a
	// longer name in processes could never match.
	maxCommLen = 15
)

// defaultDir is where systemd's StateDirectory= puts the service's state, or ./data when
// threadcap is run by hand.
func defaultDir() string {
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		// systemd lists one path per StateDirectory= entry, colon-separated.
		return strings.Split(d, ":")[0]
	}
	return "./data"
}

// Default is the configuration when neither file nor flags say otherwise.
func Default() Config {
	return Config{
		Dir:      defaultDir(),
		Hz:       1,
		Syscalls: bpf.SyscallsFull,
		Capacity: bpf.DefaultCapacity,
		Columns:  ColumnsConfig{Cgroup: true, FdTarget: true},
		Stacks:   StacksConfig{Kernel: bpf.StacksUninterruptible, Entries: bpf.DefaultStackEntries},
		IO:       true,
		Log:      LogConfig{Level: "info", Format: "text"},
		Ship:     ShipConfig{Region: "us-east-1", TLS: true, Interval: Duration(time.Minute)},
		Output: OutputConfig{
			Format:        output.FormatCSV,
			Compress:      output.CompressGzip,
			FileMode:      FileMode(output.DefaultFileMode),
			DirMode:       FileMode(output.DefaultDirMode),
			MaxAge:        Duration(14 * 24 * time.Hour),
			MinFreeBytes:  Size(1 << 30),
			FsyncInterval: Duration(10 * time.Second),
		},
		Metrics: MetricsConfig{TopProcesses: metrics.DefaultTopProcesses},
	}
}

// Interval is the time between ticks.
func (c *Config) Interval() time.Duration {
	return time.Duration(float64(time.Second) / c.Hz)
}

// setOrigin records where key's value came from; a list's items come with it.
func (c *Config) setOrigin(key, origin string) {
	if c.origins == nil {
		c.origins = map[string]string{}
	}
	for k := range c.origins {
		if strings.HasPrefix(k, key+"[") {
			delete(c.origins, k)
		}
	}
	c.origins[key] = origin
}

func (c *Config) setUndecoded(key string) {
	if c.undecoded == nil {
		c.undecoded = map[string]bool{}
	}
	c.undecoded[key] = true
}

// origin is where key's value came from; a list item without its own came with the list.
func (c *Config) origin(key string) (string, bool) {
	if o, ok := c.origins[key]; ok {
		return o, true
	}
	list, _, isItem := strings.Cut(key, "[")
	o, ok := c.origins[list]
	return o, ok && isItem
}

// IsSet says whether key was set by the file or a flag, rather than left at its default.
func (c *Config) IsSet(key string) bool {
	_, ok := c.origin(key)
	return ok
}

// keyError names the key, and where its value came from, in front of msg.
func (c *Config) keyError(key, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	origin, ok := c.origin(key)
	switch {
	case !ok:
		return fmt.Errorf("%s: %s", key, msg)
	case strings.HasPrefix(origin, "--"):
		return fmt.Errorf("%s (%s): %s", origin, key, msg)
	default:
		return fmt.Errorf("%s: %s: %s", origin, key, msg)
	}
}

// collect returns a function that adds an error about key to errs, unless the key's value
// could not be read at all (that is reported already).
func (c *Config) collect(errs *[]error) func(key, format string, args ...any) {
	return func(key, format string, args ...any) {
		if !c.undecoded[key] {
			*errs = append(*errs, c.keyError(key, format, args...))
		}
	}
}

// Validate reports every mistake at once, each naming its key and what is allowed.
func (c *Config) Validate() error {
	var errs []error
	bad := c.collect(&errs)
	if c.Dir == "" {
		bad("dir", "is empty: give the directory for the hour files")
	}
	if !(c.Hz > 0) {
		bad("hz", "%v is not a rate: use a number of samples a second, at most 100, at least one an hour (0.0003)", c.Hz)
	} else if sampler.CheckInterval(c.Interval()) != nil {
		bad("hz", "%v is %v", c.Hz, sampler.ErrInterval)
	}
	if _, err := bpf.ParseSyscallMode(string(c.Syscalls)); err != nil {
		bad("syscalls", "%v", err)
	}
	for i, pid := range c.Pids {
		if pid <= 0 {
			bad(fmt.Sprintf("pids[%d]", i), "%d is not a pid: use a positive number", pid)
		}
	}
	for i, name := range c.Processes {
		if name == "" || len(name) > maxCommLen {
			bad(fmt.Sprintf("processes[%d]", i), "%q cannot match: a process name (comm) has 1 to %d bytes", name, maxCommLen)
		}
	}
	for i, cg := range c.Cgroups {
		if !strings.HasPrefix(cg, "/") {
			bad(fmt.Sprintf("cgroups[%d]", i), "%q is not a cgroup v2 path: start it with /, like /system.slice/mysql.service", cg)
		}
	}
	if c.Capacity == 0 || c.Capacity > maxCapacity {
		bad("capacity", "%d is out of range: use 1 to %d threads", c.Capacity, maxCapacity)
	}
	if _, err := bpf.ParseStackMode(string(c.Stacks.Kernel)); err != nil {
		bad("stacks.kernel", "%v", err)
	}
	if c.Stacks.Entries == 0 || c.Stacks.Entries > bpf.MaxStackEntries {
		bad("stacks.entries", "%d is out of range: use 1 to %d distinct stacks", c.Stacks.Entries, bpf.MaxStackEntries)
	}
	if _, err := logrus.ParseLevel(c.Log.Level); err != nil {
		bad("log.level", "%q is not a level: use debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "%q is not a format: use text or json", c.Log.Format)
	}
	errs = append(errs, c.Output.validate(c)...)
	errs = append(errs, c.Metrics.validate(c)...)
	errs = append(errs, c.Ship.validate(c)...)
	errs = append(errs, c.validateSpans()...)
	if err := bpf.CheckProfileHz(c.Profile.Hz); err != nil {
		bad("profile.hz", "%v", err)
	}
	return errors.Join(errs...)
}

func (m *MetricsConfig) validate(c *Config) []error {
	var errs []error
	bad := c.collect(&errs)
	// The endpoint owns these checks.
	if m.Listen != "" {
		if err := metrics.CheckListen(m.Listen); err != nil {
			bad("metrics.listen", "%v, or leave it empty for no endpoint", err)
		}
	}
	if err := metrics.CheckTopProcesses(m.TopProcesses); err != nil {
		bad("metrics.top_processes", "%v", err)
	}
	return errs
}

func (o *OutputConfig) validate(c *Config) []error {
	var errs []error
	bad := c.collect(&errs)
	// The writer owns these checks.
	for _, chk := range []struct {
		key string
		err error
	}{
		{"output.format", output.CheckFormat(o.Format)},
		{"output.compress", output.CheckCompress(o.Compress)},
		{"output.file_mode", output.CheckFileMode(os.FileMode(o.FileMode))},
		{"output.dir_mode", output.CheckDirMode(os.FileMode(o.DirMode))},
	} {
		if chk.err != nil {
			bad(chk.key, "%v", chk.err)
		}
	}
	if _, err := output.LookupGroup(o.Group); err != nil {
		bad("output.group", "%v", err)
	}
	if c.Host != "" {
		if err := hourfile.CheckHost(c.Host); err != nil {
			bad("host", "%v", err)
		}
	}
	return errs
}

func (s *ShipConfig) validate(c *Config) []error {
	var errs []error
	bad := c.collect(&errs)
	if s.Endpoint == "" {
		return nil
	}
	if strings.Contains(s.Endpoint, "/") {
		bad("ship.endpoint", "%q is not host[:port]: leave out the scheme and path (tls says https or http)", s.Endpoint)
	}
	if s.Bucket == "" {
		bad("ship.bucket", "is empty: name the bucket the hours go to")
	}
	if c.Output.Format == output.FormatCSV {
		bad("ship.endpoint", "ships Parquet hours: set output.format to parquet or both")
	}
	if s.Interval < Duration(time.Second) {
		bad("ship.interval", "%s is too short: at least 1s", s.Interval)
	}
	return errs
}

// Shipper is what the shipper is started with, but for the credentials.
func (c *Config) Shipper(log *logrus.Entry) ship.Config {
	s := c.Ship
	return ship.Config{Dir: c.Dir, Endpoint: s.Endpoint, Bucket: s.Bucket, Prefix: s.Prefix, Region: s.Region,
		TLS: s.TLS, Interval: time.Duration(s.Interval), Log: log}
}

// Tracker is what the kernel side is loaded with.
func (c *Config) Tracker() bpf.Config {
	return bpf.Config{Capacity: c.Capacity, Syscalls: c.Syscalls, Stacks: c.Stacks.Kernel, UserStacks: c.Stacks.User, StackEntries: c.Stacks.Entries, IO: c.IO}
}

// Writer is what the writer is opened with.
func (c *Config) Writer(log *logrus.Entry) output.Config {
	o := c.Output
	return output.Config{
		Dir: c.Dir, FileMode: os.FileMode(o.FileMode), DirMode: os.FileMode(o.DirMode), Group: o.Group,
		Format: o.Format, Host: c.Host,
		Compress: o.Compress, MaxAge: time.Duration(o.MaxAge), MaxBytes: int64(o.MaxBytes),
		MinFreeBytes: int64(o.MinFreeBytes), FsyncEvery: time.Duration(o.FsyncInterval), Log: log,
	}
}

// Fields is the effective configuration, flattened for the start-up log line (and the
// keys Diff compares).
func (c *Config) Fields() logrus.Fields {
	o := c.Output
	return logrus.Fields{
		"dir": c.Dir, "hz": c.Hz, "all": c.All, "syscalls": c.Syscalls, "pids": c.Pids,
		"processes": c.Processes, "cgroups": c.Cgroups, "capacity": c.Capacity,
		"columns.cgroup": c.Columns.Cgroup, "columns.fd_target": c.Columns.FdTarget,
		"stacks.kernel": c.Stacks.Kernel, "stacks.user": c.Stacks.User, "stacks.entries": c.Stacks.Entries,
		"io":        c.IO,
		"log.level": c.Log.Level, "log.format": c.Log.Format,
		"host": c.Host, "output.format": o.Format,
		"ship.endpoint": c.Ship.Endpoint, "ship.bucket": c.Ship.Bucket, "ship.prefix": c.Ship.Prefix,
		"ship.region": c.Ship.Region, "ship.tls": c.Ship.TLS, "ship.credentials_file": c.Ship.CredentialsFile,
		"ship.interval": c.Ship.Interval.String(), "output.compress": o.Compress, "output.file_mode": o.FileMode.String(),
		"output.dir_mode": o.DirMode.String(), "output.group": o.Group,
		"output.max_age": o.MaxAge.String(), "output.max_bytes": int64(o.MaxBytes),
		"output.min_free_bytes": int64(o.MinFreeBytes), "output.fsync_interval": o.FsyncInterval.String(),
		"metrics.listen": c.Metrics.Listen, "metrics.top_processes": c.Metrics.TopProcesses,
		"spans": c.spansField(), "profile.hz": c.Profile.Hz,
	}
}
