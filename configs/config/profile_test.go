// SPDX-License-Identifier: Apache-2.0

package config

import (
	"strings"
	"testing"
)

// TestProfileHz: off by default; a rate out of range is refused naming the key, its line
// and the range.
func TestProfileHz(t *testing.T) {
	if d := Default(); d.Profile.Hz != 0 {
		t.Errorf("profile.hz defaults to %d, want 0 (off)", d.Profile.Hz)
	}
	c, err := load(t, "profile:\n  hz: 99\n")
	if err != nil || c.Profile.Hz != 99 {
		t.Errorf("profile.hz 99: %d, %v", c.Profile.Hz, err)
	}
	for _, yaml := range []string{"profile:\n  hz: 5000\n", "profile:\n  hz: -1\n"} {
		_, err := load(t, yaml)
		if err == nil || !strings.Contains(err.Error(), ":2: profile.hz:") || !strings.Contains(err.Error(), "1 to 1000") {
			t.Errorf("%q: error %v, want profile.hz at line 2 and the range", yaml, err)
		}
	}
}
