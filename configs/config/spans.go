// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/bpf/usdt"
)

// SpanConfig is one span, or a preset of several: what an application was doing between
// a start and an end probe in a binary.
type SpanConfig struct {
	// Preset names a built-in set of spans (postgresql, postgresql_buffers); Binary then
	// overrides where its binary is found.
	Preset string `yaml:"preset"`
	Name   string `yaml:"name"`
	Binary string `yaml:"binary"`
	// Start and End are "usdt PROVIDER:NAME", "entry SYMBOL" or "return SYMBOL".
	Start string `yaml:"start"`
	End   string `yaml:"end"`
	// TextArg and IntArg are the start's arguments (1-based) captured: a string shown
	// as span_arg, and an integer; 0 captures none.
	TextArg int `yaml:"text_arg"`
	IntArg  int `yaml:"int_arg"`
}

// spanName is what a span's name may be: it is a value of the span column and of the
// spans files, and a --where filter.
var spanName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// postgresqlBinaries is where Debian and Ubuntu put the server, one directory a major
// version; the newest one found is used when the preset names no binary.
const postgresqlBinaries = "/usr/lib/postgresql/*/bin/postgres"

// presets are the built-in span sets. PostgreSQL's probes are documented in its
// "Dynamic Tracing" chapter; Debian's server is built with them (--enable-dtrace).
// buffer_read is a preset of its own: its probes fire at every buffer access, cache hits
// included, which costs pgbench 10-17% of its TPS, where the others cost about 3%
// (BENCHMARKS.md).
var presets = map[string][]SpanConfig{
	"postgresql": {
		{Name: "query", Start: "usdt postgresql:query__start", End: "usdt postgresql:query__done", TextArg: 1},
		{Name: "lock_wait", Start: "usdt postgresql:lock__wait__start", End: "usdt postgresql:lock__wait__done", IntArg: 6},
		{Name: "lwlock_wait", Start: "usdt postgresql:lwlock__wait__start", End: "usdt postgresql:lwlock__wait__done", TextArg: 1},
	},
	"postgresql_buffers": {
		{Name: "buffer_read", Start: "usdt postgresql:buffer__read__start", End: "usdt postgresql:buffer__read__done", IntArg: 1},
	},
}

// presetNames lists the presets, for messages.
const presetNames = "postgresql or postgresql_buffers"

// expandSpans replaces presets with their spans, each with the preset's binary (found
// when not given).
func expandSpans(spans []SpanConfig) ([]SpanConfig, error) {
	var out []SpanConfig
	for _, s := range spans {
		if s.Preset == "" {
			out = append(out, s)
			continue
		}
		set, ok := presets[s.Preset]
		if !ok {
			return nil, fmt.Errorf("no preset %q: use %s", s.Preset, presetNames)
		}
		bin := s.Binary
		if bin == "" {
			var err error
			if bin, err = findBinary(postgresqlBinaries); err != nil {
				return nil, err
			}
		}
		for _, p := range set {
			p.Binary = bin
			out = append(out, p)
		}
	}
	return out, nil
}

// findBinary is the path matching pattern with the highest version number in it.
func findBinary(pattern string) (string, error) {
	found, _ := filepath.Glob(pattern)
	if len(found) == 0 {
		return "", fmt.Errorf("no binary matches %s: give its path as binary", pattern)
	}
	version := func(p string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return v
	}
	return slices.MaxFunc(found, func(a, b string) int { return version(a) - version(b) }), nil
}

// validateSpans checks each span's shape; the probes are looked for in their binaries by
// SpanProbes, at start.
func (c *Config) validateSpans() []error {
	var errs []error
	bad := c.collect(&errs)
	names := map[string]bool{}
	for i, s := range c.Spans {
		key := fmt.Sprintf("spans[%d]", i)
		if s.Preset != "" {
			if _, ok := presets[s.Preset]; !ok {
				bad(key+".preset", "no preset %q: use %s", s.Preset, presetNames)
			}
			if s.Name != "" || s.Start != "" || s.End != "" || s.TextArg != 0 || s.IntArg != 0 {
				bad(key, "a preset takes only binary: give other spans as items of their own")
			}
			for _, p := range presets[s.Preset] {
				if names[p.Name] {
					bad(key+".preset", "%s has a span %s already configured: give each span once", s.Preset, p.Name)
				}
				names[p.Name] = true
			}
			continue
		}
		if !spanName.MatchString(s.Name) {
			bad(key+".name", "%q is not a span name: use 1 to 32 lowercase letters, digits and _, starting with a letter", s.Name)
		} else if names[s.Name] {
			bad(key+".name", "%q is used twice: give each span its own name", s.Name)
		}
		names[s.Name] = true
		if !filepath.IsAbs(s.Binary) {
			bad(key+".binary", "%q is not an absolute path: give the executable or library with the probes", s.Binary)
		}
		for _, p := range []struct{ key, v string }{{"start", s.Start}, {"end", s.End}} {
			if _, err := usdt.ParsePoint(p.v); err != nil {
				bad(key+"."+p.key, "%v", err)
			}
		}
		for _, a := range []struct {
			key string
			n   int
		}{{"text_arg", s.TextArg}, {"int_arg", s.IntArg}} {
			if a.n < 0 || a.n > 12 {
				bad(key+"."+a.key, "%d is not an argument: use 1 to 12, or 0 for none", a.n)
			}
		}
	}
	if len(names) > bpf.MaxSpans {
		bad("spans", "%d spans: at most %d", len(names), bpf.MaxSpans)
	}
	return errs
}

// SpanProbes finds every span's probes in its binary: the span names, in span id order,
// and the sites for the kernel side. The error names the span and what its binary offers
// instead; it is a mistake in the config (exit code 2).
func (c *Config) SpanProbes() (names []string, probes []bpf.SpanProbe, err error) {
	spans, err := expandSpans(c.Spans)
	if err != nil {
		return nil, nil, UsageError{fmt.Errorf("spans: %w", err)}
	}
	var errs []string
	for _, s := range spans {
		// Checked by Validate.
		start, _ := usdt.ParsePoint(s.Start)
		end, _ := usdt.ParsePoint(s.End)
		def := bpf.SpanDef{Binary: s.Binary, Start: start, End: end, IntArg: s.IntArg, TextArg: s.TextArg}
		p, err := def.Probes(uint16(len(names)))
		if err != nil {
			errs = append(errs, fmt.Sprintf("span %s: %v", s.Name, err))
			continue
		}
		names = append(names, s.Name)
		probes = append(probes, p...)
	}
	if len(errs) > 0 {
		return nil, nil, UsageError{fmt.Errorf("%s", strings.Join(errs, "\n"))}
	}
	if len(probes) > bpf.MaxSpanProbes {
		return nil, nil, UsageError{fmt.Errorf("spans: %d probe sites; at most %d can be attached: configure fewer spans", len(probes), bpf.MaxSpanProbes)}
	}
	return names, probes, nil
}

// spansField is the spans for the start-up log line and Diff: one name=binary per span.
func (c *Config) spansField() string {
	var parts []string
	for _, s := range c.Spans {
		name := s.Name
		if s.Preset != "" {
			name = "preset:" + s.Preset
		}
		parts = append(parts, fmt.Sprintf("%s=%s[%s>%s %d %d]", name, s.Binary, s.Start, s.End, s.TextArg, s.IntArg))
	}
	return strings.Join(parts, ",")
}
