// SPDX-License-Identifier: Apache-2.0

package schema

import "github.com/threadcap/threadcap/state"

// What an active session does at its tick. A row is an active session when, at its tick,
// its thread is on CPU, runnable or uninterruptible (D), or is inside a span (its span
// column is not empty), whatever its state: a query waiting on a lock sleeps, and is as
// much an active session as pg_stat_activity's state = 'active' or Oracle's ASH count it.
// Any other row (sleeping or stopped outside a span, and an exited thread's last) counts
// in CPU seconds and the time columns, not in average active threads. README's "Time
// travel" defines it for users; the report, the Prometheus metrics and the DuckDB recipes
// count by it.
const (
	SessionOnCPU = iota
	SessionRunnable
	SessionUninterruptible
	SessionSleepingInSpan
	SessionStoppedInSpan
	// SessionKinds is how many kinds there are.
	SessionKinds
)

var sessionNames = [SessionKinds]string{"on_cpu", "runnable", "uninterruptible", "sleeping_in_span", "stopped_in_span"}

// SessionName names a kind of active session, as reports and metrics label it.
func SessionName(kind int) string { return sessionNames[kind] }

// Session says which kind of active session a row of a thread in s, inside a span or not,
// is; false when it is not one. An exited thread's row never is.
func Session(s state.State, inSpan bool) (kind int, active bool) {
	switch s {
	case state.OnCPU:
		return SessionOnCPU, true
	case state.Runnable:
		return SessionRunnable, true
	case state.Uninterruptible:
		return SessionUninterruptible, true
	case state.Sleeping:
		return SessionSleepingInSpan, inSpan
	case state.Stopped:
		return SessionStoppedInSpan, inSpan
	}
	return 0, false
}
