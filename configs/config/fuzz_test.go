// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func isUsage(err error) bool { return errors.As(err, new(UsageError)) }

// FuzzParseConfig feeds the parser arbitrary files. Under plain `go test` it runs the
// seeds; `go test -fuzz FuzzParseConfig ./configs/config` explores further.
func FuzzParseConfig(f *testing.F) {
	shipped, err := os.ReadFile("../threadcap.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shipped)
	for _, seed := range []string{
		"", "hz: 2\n", "hz: [1]\n", "output: 3\n", "output:\n  max_age: 3d\n  nope: 1\n",
		"pids: [1, x, 3]\n", "a: &a 1\nb: *a\n", "hz: 1\n---\nhz: 2\n", "{hz: 1, log: {level: debug}}",
		"dir: \"\\x00\"\n", "hz: 1\nhz: 1\n", "? [a]\n: 1\n", "output:\n  file_mode: 0o755\n", "? 0\n\n 0", "? 0\n\n 0\n: 1\n? 0\n\n 0\n: 2\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		err := parseConfig("fuzz.yaml", data, &cfg)
		if err == nil {
			// Whatever was accepted is either valid or refused by Validate, never a panic.
			_ = cfg.Validate()
			return
		}
		// Every message points at the file, so that the user knows what to open.
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.Contains(line, "fuzz.yaml") {
				t.Errorf("message %q does not name the file", line)
			}
		}
	})
}
