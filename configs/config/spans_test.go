// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSpansMistakes: every mistake in spans is reported at once, each naming its item's
// key and line.
func TestSpansMistakes(t *testing.T) {
	_, err := load(t, `spans:
  - name: Query
    binary: postgres
    start: usdt query__start
    end: return f
  - name: ok
    binary: /bin/true
    start: entry main
    end: return main
    text_arg: 13
  - preset: mysql
  - preset: postgresql
    name: query
  - preset: postgresql
`)
	if !isUsage(err) {
		t.Fatalf("err %v, want a usage error", err)
	}
	for _, want := range []string{
		`spans[0].name: "Query" is not a span name`,
		`spans[0].binary: "postgres" is not an absolute path`,
		`spans[0].start: "usdt query__start": write a USDT probe as`,
		`spans[1].text_arg: 13 is not an argument`,
		`spans[2].preset: no preset "mysql"`,
		`spans[3]: a preset takes only binary`,
		`spans[4].preset: postgresql has a span query already configured`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "spans[0].end") {
		t.Errorf("a good end was reported: %v", err)
	}
}

// TestSpanProbesNamesWhatIsMissing: a probe missing from its binary is a config mistake
// naming the span and what the binary has; a preset's spans come in order.
func TestSpanProbesNamesWhatIsMissing(t *testing.T) {
	cfg, err := load(t, "spans:\n  - name: f\n    binary: /bin/true\n    start: usdt a:b\n    end: usdt a:c\n")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cfg.SpanProbes()
	if !isUsage(err) || !strings.Contains(err.Error(), "span f: start: /bin/true has no USDT probes") {
		t.Errorf("SpanProbes: %v, want a usage error naming span f and the binary", err)
	}

	bins, _ := filepath.Glob(postgresqlBinaries)
	if len(bins) == 0 {
		t.Skip("PostgreSQL is not installed")
	}
	cfg, err = load(t, "spans:\n  - preset: postgresql\n  - preset: postgresql_buffers\n")
	if err != nil {
		t.Fatal(err)
	}
	names, probes, err := cfg.SpanProbes()
	if err != nil || !slices.Equal(names, []string{"query", "lock_wait", "lwlock_wait", "buffer_read"}) || len(probes) < 8 {
		t.Errorf("postgresql preset: %v, %d probes, %v", names, len(probes), err)
	}
	for _, p := range probes {
		if p.Span == 0 && !p.End && p.TextArg.Size != 8 {
			t.Errorf("query__start captures no query text: %+v", p)
		}
	}
	cfg.Spans[0].Binary = "/bin/true"
	if _, _, err := cfg.SpanProbes(); !errors.As(err, new(UsageError)) || !strings.Contains(err.Error(), "span query:") {
		t.Errorf("preset on a binary without probes: %v", err)
	}
}
