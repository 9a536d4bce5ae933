// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/threadcap/threadcap/state"
)

// TestThreadSecondsByUnit: the rows' time by systemd unit, with the processes' bound on
// labels (one here): the first unit seen has its series, the other unit and the rows
// without a unit are in unit="other", and no time is lost.
func TestThreadSecondsByUnit(t *testing.T) {
	m := newTestMetrics(false, nil)
	m.Rows(time.Unix(100, 0), []state.Sample{
		{Process: "mysqld", Unit: "mysql.service", StateTimeUs: [state.TimedStates]int64{state.OnCPU: 250_000, state.Uninterruptible: 750_000}},
		{Process: "bash", Unit: "session-3.scope", StateTimeUs: [state.TimedStates]int64{state.Runnable: 1_000_000}},
		{Process: "kworker/0:1", StateTimeUs: [state.TimedStates]int64{state.OnCPU: 500_000, state.Sleeping: 500_000}},
	})
	want := `
# HELP threadcap_unit_thread_seconds_total threadcap_thread_seconds_total by systemd unit or scope (the unit column) instead of process: the top units by activity have a label of their own, the rest (and rows without a unit) are unit="other".
# TYPE threadcap_unit_thread_seconds_total counter
threadcap_unit_thread_seconds_total{state="on_cpu",unit="mysql.service"} 0.25
threadcap_unit_thread_seconds_total{state="runnable",unit="mysql.service"} 0
threadcap_unit_thread_seconds_total{state="sleeping",unit="mysql.service"} 0
threadcap_unit_thread_seconds_total{state="stopped",unit="mysql.service"} 0
threadcap_unit_thread_seconds_total{state="uninterruptible",unit="mysql.service"} 0.75
threadcap_unit_thread_seconds_total{state="on_cpu",unit="other"} 0.5
threadcap_unit_thread_seconds_total{state="runnable",unit="other"} 1
threadcap_unit_thread_seconds_total{state="sleeping",unit="other"} 0.5
threadcap_unit_thread_seconds_total{state="stopped",unit="other"} 0
threadcap_unit_thread_seconds_total{state="uninterruptible",unit="other"} 0
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "threadcap_unit_thread_seconds_total"); err != nil {
		t.Error(err)
	}
}
