// SPDX-License-Identifier: Apache-2.0

package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The value types of the config file. Their UnmarshalYAML returns a *yaml.TypeError, so
// that the decoder goes on and every bad value in a file is reported at once.

// FileMode is a permission mode written in octal: 0640.
type FileMode uint32

func (m *FileMode) UnmarshalYAML(n *yaml.Node) error {
	v, err := strconv.ParseUint(strings.TrimPrefix(n.Value, "0o"), 8, 32)
	if n.Kind != yaml.ScalarNode || err != nil {
		return typeError(n, "%q is not an octal mode: write it like 0640", n.Value)
	}
	*m = FileMode(v)
	return nil
}

func (m FileMode) String() string { return fmt.Sprintf("%#o", uint32(m)) }

// Duration is a Go duration ("90s", "36h") or a number of days ("14d"); 0 turns the
// setting off.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return typeError(n, "%q is not a duration: write it like 90s, 36h or 14d", n.Value)
	}
	*d = Duration(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		return time.Duration(n) * 24 * time.Hour, err
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		return 0, fmt.Errorf("negative duration %s", s)
	}
	return d, err
}

// String says whole days as days, so the logged value reads like the file's.
func (d Duration) String() string {
	day := 24 * time.Hour
	if td := time.Duration(d); td >= day && td%day == 0 {
		return fmt.Sprintf("%dd", td/day)
	}
	return time.Duration(d).String()
}

// Size is a number of bytes, plain or with a unit: 500MB, 2GiB; 0 turns the setting off.
type Size int64

// sizeUnits are checked in order, so that "MiB" is not read as "B".
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseSize(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return typeError(n, "%q is not a size: write bytes, or a number with KB, MB, GB, TB, KiB, MiB, GiB or TiB", n.Value)
	}
	*s = Size(v)
	return nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}
