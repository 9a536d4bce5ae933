// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// SIGHUP with a bad file changes nothing; with a good one the new rate takes effect, and
// what needs a restart is named.
func TestSighupReloadsTheRate(t *testing.T) {
	privileged.Require(t)
	workload.Spinner(t) // so that every tick has a row
	dir := t.TempDir()
	config := filepath.Join(t.TempDir(), "threadcap.yaml")
	write := func(yaml string) {
		if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("hz: 2\n")
	d := start(t, dir, "--config", config)
	// Ticks fall on multiples of the interval: at 2 Hz, on whole half seconds; at 10 Hz
	// four in five fall between them.
	offHalfSecond := func() bool {
		for _, ts := range sampleTimes(t, rowsSoFar(t, dir))[1:] { // the first is at start
			if ts.Truncate(500*time.Millisecond) != ts && ts.Truncate(100*time.Millisecond) == ts {
				return true
			}
		}
		return false
	}
	waitFor(t, d, "three ticks", func() bool { return len(sampleTimes(t, rowsSoFar(t, dir))) >= 3 })
	if offHalfSecond() {
		t.Fatal("a tick between half seconds at 2 Hz")
	}

	write("hz: 1000\n")
	d.Signal(t, syscall.SIGHUP)
	waitFor(t, d, "log of the rejected config", func() bool { return strings.Contains(d.Log.String(), "config not reloaded") })
	if !strings.Contains(d.Log.String(), "hz: 1000 is out of range") || offHalfSecond() {
		t.Errorf("a bad config was not refused, naming hz:\n%s", d.Log.String())
	}

	write("hz: 10\ncapacity: 1000\n")
	d.Signal(t, syscall.SIGHUP)
	waitFor(t, d, "a tick at 10 Hz", offHalfSecond)
	log := d.Log.String()
	if !strings.Contains(log, `changed="[hz]"`) || !strings.Contains(log, `needs_restart="[capacity]"`) {
		t.Errorf("the reload does not say what changed and what needs a restart:\n%s", log)
	}
	stop(t, d)
	validRows(t, dir)
}
