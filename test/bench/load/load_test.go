// SPDX-License-Identifier: Apache-2.0

package load

import (
	"os"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.5, 5 * time.Millisecond},
	} {
		if got := percentile(c.sorted, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
}

// run runs w once for a short window and checks it did some work.
func run(t *testing.T, w Workload) Result {
	t.Helper()
	r, err := w.Run(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.OpsPerSec <= 0 {
		t.Fatalf("no throughput: %+v", r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSyscallsCount(t *testing.T) {
	// Even a slow, shared machine makes far more than 10,000 getppid calls a second.
	if r := run(t, &Syscalls{Threads: 2}); r.OpsPerSec < 10_000 {
		t.Errorf("%.0f syscalls/s", r.OpsPerSec)
	}
}

func TestPingPongRoundTrips(t *testing.T) {
	run(t, &PingPong{Pairs: 2, CPU: 0})
}

func TestMixTimesTransactions(t *testing.T) {
	m, err := NewMix(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, m)
	if r.P50Us <= 0 || r.P99Us < r.P50Us {
		t.Errorf("latency percentiles p50 %v µs, p99 %v µs", r.P50Us, r.P99Us)
	}
}

// The directread workload reads and times its reads.
func TestDirectReadTimesReads(t *testing.T) {
	d, err := NewDirectRead(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, d)
	if r.OpsPerSec <= 0 || r.P50Us <= 0 || r.P99Us < r.P50Us {
		t.Errorf("%v reads/s, latency percentiles p50 %v µs, p99 %v µs", r.OpsPerSec, r.P50Us, r.P99Us)
	}
}

func threads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

func TestScaleWakesEveryIdleThreadAndEndsThemAll(t *testing.T) {
	before := threads(t)
	s := NewScale(300, 5)
	// NewScale waits for the idle threads only.
	if n := threads(t); n < before+300 {
		t.Fatalf("%d threads running, want at least %d", n, before+300)
	}
	for range 2 {
		if err := s.Wake(); err != nil {
			t.Fatal(err)
		}
	}
	run(t, s)
	// A thread ends just after its goroutine signals it is done; Go keeps a few of its
	// own around, but the workload's must all go.
	n := threads(t)
	for deadline := time.Now().Add(10 * time.Second); n > before+10 && time.Now().Before(deadline); n = threads(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if n > before+10 {
		t.Errorf("%d threads left after Close, %d before the workload", n, before)
	}
}
