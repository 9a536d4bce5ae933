// SPDX-License-Identifier: Apache-2.0

package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// load runs the whole configuration path: yaml written to a file, then flags.
func load(t *testing.T, yaml string, flags ...string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "threadcap.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := ParseFlags("run", append([]string{"--config", path}, flags...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return opts.Load()
}

// allKeys lists every key of Config, as the file spells it.
func allKeys(prefix string, t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, allKeys(join(prefix, tag), f.Type)...)
		} else {
			keys = append(keys, join(prefix, tag))
		}
	}
	return keys
}

func TestShippedConfigSaysTheDefaults(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "")
	got := Default()
	if err := ReadFile("../threadcap.yaml", &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range allKeys("", reflect.TypeOf(Config{})) {
		if _, ok := got.origins[key]; !ok {
			t.Errorf("configs/threadcap.yaml does not document %s", key)
		}
	}
	want := Default()
	// The one value it sets: where the service keeps its files.
	want.Dir = "/var/lib/threadcap"
	got.origins = nil
	// The file writes empty lists; the defaults have none. Both keep every process.
	for _, l := range []*[]string{&got.Processes, &got.Cgroups} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(got.Pids) == 0 {
		got.Pids = nil
	}
	if len(got.Spans) == 0 {
		got.Spans = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configs/threadcap.yaml gives\n%+v\nwant the defaults\n%+v", got, want)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "")
	if d := Default().Dir; d != "./data" {
		t.Errorf("default dir by hand = %q, want ./data", d)
	}
	t.Setenv("STATE_DIRECTORY", "/var/lib/threadcap:/var/lib/other")
	if d := Default().Dir; d != "/var/lib/threadcap" {
		t.Errorf("default dir under systemd = %q, want the first StateDirectory", d)
	}
}

func TestFileThenFlags(t *testing.T) {
	cfg, err := load(t, "hz: 5\nall: true\npids: [10, 11]\noutput:\n  max_age: 36h\n  max_bytes: 2GiB\n  file_mode: 0600\n",
		"--hz", "20", "--pid", "7,8", "--pid", "9", "--process", "mysqld", "--cgroup", "/system.slice/x.service")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hz != 20 || !cfg.All || !slices.Equal(cfg.Pids, []int32{7, 8, 9}) {
		t.Errorf("hz %v all %v pids %v: want the flags' 20 and 7,8,9 over the file, and the file's all", cfg.Hz, cfg.All, cfg.Pids)
	}
	if !slices.Equal(cfg.Processes, []string{"mysqld"}) || !slices.Equal(cfg.Cgroups, []string{"/system.slice/x.service"}) {
		t.Errorf("processes %v cgroups %v", cfg.Processes, cfg.Cgroups)
	}
	o := cfg.Output
	if time.Duration(o.MaxAge) != 36*time.Hour || o.MaxBytes != 2<<30 || o.FileMode != 0o600 {
		t.Errorf("output %+v: want max age 36h, 2 GiB, mode 0600", o)
	}
	if o.Compress != "gzip" || o.FsyncInterval != Duration(10*time.Second) {
		t.Errorf("output %+v: keys the file leaves out must keep their defaults", o)
	}
}

func TestEveryMistakeIsReportedWithKeyAndLine(t *testing.T) {
	yaml := `hz: 500
syscalls: fast
pids: [1, -3]
processes: [a_name_longer_than_fifteen]
cgroups: [system.slice]
capacity: lots
log:
  level: loud
  format: xml
output:
  compres: gzip
  compress: lz4
  file_mode: 0200
  dir_mode: rwx
  group: no-such-group-here
  max_age: forever
  max_bytes: -1
  fsync_interval: 5
  format: columnar
metrics:
  listen: localhost
  top_processes: -1
host: a/b
`
	_, err := load(t, yaml, "--log-format", "yaml")
	if err == nil {
		t.Fatal("no error")
	}
	if !isUsage(err) {
		t.Errorf("%v is not a usage error (exit code 2)", err)
	}
	want := []string{
		":1: hz: 500", ":2: syscalls: \"fast\"", ":3: pids[1]: -3", ":4: processes[0]:",
		":5: cgroups[0]: \"system.slice\"", ":6: capacity: \"lots\" is not a whole number",
		":8: log.level: \"loud\"", "--log-format (log.format): \"yaml\"",
		":11: output.compres: unknown key: use one of compress,", ":12: output.compress: \"lz4\"",
		":13: output.file_mode: 0200", ":14: output.dir_mode: \"rwx\"", ":15: output.group:",
		":16: output.max_age: \"forever\"", ":17: output.max_bytes: \"-1\"", ":18: output.fsync_interval: \"5\"",
		":21: metrics.listen: \"localhost\" is not an address", ":22: metrics.top_processes: -1",
		":19: output.format: \"columnar\"", ":23: host: host \"a/b\"",
	}
	lines := strings.Split(err.Error(), "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("no error contains %q", w)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d errors, want %d (one per mistake):\n%v", len(lines), len(want), err)
	}
}

func TestFilesRefusedBeforeParsing(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		bomb += string(i) + ": &" + string(i) + " [" + strings.Repeat("*"+string(i-1)+", ", 9) + "*" + string(i-1) + "]\n"
	}
	for name, tc := range map[string]struct{ data, want string }{
		"too big":       {"# " + strings.Repeat("x", maxConfigBytes) + "\n", "larger than"},
		"binary":        {"hz: 1\x00\x01\x02", "not a UTF-8 text file"},
		"not utf-8":     {"hz: \xff\xfe", "not a UTF-8 text file"},
		"alias bomb":    {bomb, "anchors and aliases"},
		"two documents": {"hz: 1\n---\nhz: 2\n", ":2: a second YAML document"},
		"not a mapping": {"- hz: 1\n", ":1: the config must be a mapping"},
		"syntax":        {"hz: 1\n  dir: x\n", ":2: mapping values are not allowed"},
		"duplicate":     {"hz: 1\nhz: 2\n", ":2: hz: set twice (also on line 1)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !isUsage(err) {
				t.Errorf("error %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

func TestEmptyFileAndMissingDefaultFile(t *testing.T) {
	cfg, err := load(t, "# only comments\n")
	if err != nil || cfg.Hz != 1 {
		t.Errorf("empty file: %v, hz %v; want the defaults", err, cfg.Hz)
	}
	opts, err := ParseFlags("run", nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	opts.Path = filepath.Join(t.TempDir(), "absent.yaml") // as if it were the default
	if _, err := opts.Load(); err != nil {
		t.Errorf("a missing default file: %v, want the defaults", err)
	}
	opts.Explicit = true
	if _, err := opts.Load(); err == nil || !isUsage(err) {
		t.Errorf("a missing --config file: %v, want a usage error", err)
	}
}

func TestValueSyntax(t *testing.T) {
	sizes := map[string]int64{"0": 0, "1234": 1234, "2KB": 2000, "2KiB": 2048, "3 MiB": 3 << 20, "1GiB": 1 << 30, "5TB": 5e12}
	for s, want := range sizes {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1.5GB", "GB", "1PB", "9999999TiB"} {
		if _, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) accepted", s)
		}
	}
	durations := map[string]time.Duration{"0": 0, "90s": 90 * time.Second, "36h": 36 * time.Hour, "14d": 14 * 24 * time.Hour}
	for s, want := range durations {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1h", "d", "1.5d", "forever", "10"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) accepted", s)
		}
	}
	if s := Duration(14 * 24 * time.Hour).String(); s != "14d" {
		t.Errorf("14 days print as %q", s)
	}
}

func TestMetricsListen(t *testing.T) {
	for _, tc := range []struct {
		listen string
		ok     bool
	}{
		{"", true}, {"127.0.0.1:9465", true}, {"[::1]:0", true}, {"localhost:9465", true}, {":9465", true},
		{"127.0.0.1", false}, {"127.0.0.1:http", false}, {"127.0.0.1:65536", false}, {"::1:9465", false},
	} {
		c := Default()
		c.Metrics.Listen = tc.listen
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("metrics.listen %q: error %v, want ok=%v", tc.listen, err, tc.ok)
		}
	}
}

func TestShipSettings(t *testing.T) {
	c := Default()
	c.Ship.Endpoint = "https://s3.example.com/x"
	err := c.Validate()
	for _, want := range []string{"ship.endpoint: \"https://s3.example.com/x\" is not host[:port]", "ship.bucket: is empty",
		"ship.endpoint: ships Parquet hours: set output.format to parquet or both"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want a mistake saying %q", err, want)
		}
	}
	c.Ship.Endpoint, c.Ship.Bucket, c.Output.Format = "s3.example.com", "tc", "both"
	if err := c.Validate(); err != nil {
		t.Errorf("a good ship section: %v", err)
	}
	if !c.Ship.TLS {
		t.Error("TLS is off by default")
	}
}
