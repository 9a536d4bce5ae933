// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// pressureCapacity is far below the threads the test holds, and above what a quiet
// machine runs at once.
const pressureCapacity = 2048

// TestMapPressure holds more threads than the map has records: the thread tracked before
// keeps its rows, the refused ones are counted and logged, and once the crowd exits a new
// thread is tracked again and the log says the map has room.
func TestMapPressure(t *testing.T) {
	watched := workload.Burster(t, 5*time.Millisecond, 50*time.Millisecond)
	p := startPipeline(t, options{capacity: pressureCapacity, interval: 100 * time.Millisecond})
	waitTracked(t, p, int32(watched.Tid))

	floodStart := time.Now()
	release := make(chan struct{})
	held := holdThreads(pressureCapacity+512, release)
	time.Sleep(2 * time.Second)
	floodEnd := time.Now()
	counters, err := p.tracker.Counters()
	if err != nil {
		t.Fatal(err)
	}
	untracked := counters.UntrackedThreads
	close(release)
	held.Wait()

	time.Sleep(500 * time.Millisecond) // the crowd's last switch-outs, and ticks to free their slots
	fresh := workload.Burster(t, 5*time.Millisecond, 50*time.Millisecond)
	waitTracked(t, p, int32(fresh.Tid))
	deadline := time.Now().Add(30 * time.Second)
	for logged(p.hook, logrus.InfoLevel, "thread map has room again") == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	p.stop(t)
	if err := p.writer.Close(); err != nil {
		t.Fatal(err)
	}

	tid, when, onCPU := column(t, "tid"), column(t, "sample_time"), column(t, "on_cpu_us")
	var floodTicks, watchedRows int
	seen := map[string]bool{}
	for _, row := range readHours(t, p.dir) {
		at, err := time.Parse(time.RFC3339Nano, row[when])
		if err != nil {
			t.Fatal(err)
		}
		if at.Before(floodStart) || at.After(floodEnd) {
			continue
		}
		if !seen[row[when]] {
			seen[row[when]] = true
			floodTicks++
		}
		if row[tid] == strconv.Itoa(watched.Tid) && row[onCPU] != "" && row[onCPU] != "0" {
			watchedRows++
		}
	}
	t.Logf("capacity %d, %d threads held: %d untracked; the tracked thread has CPU time in %d of %d ticks meanwhile",
		pressureCapacity, pressureCapacity+512, untracked, watchedRows, floodTicks)
	if untracked < 512 {
		t.Errorf("%d threads counted as untracked, want at least the 512 held beyond capacity", untracked)
	}
	if st := p.sampler.Stats(); st.UntrackedThreads < untracked {
		t.Errorf("the sampler's stats show %d untracked threads, the kernel side counted %d", st.UntrackedThreads, untracked)
	}
	if n := logged(p.hook, logrus.WarnLevel, "thread map is full"); n != 1 {
		t.Errorf("a full map was logged %d times, want once", n)
	}
	if logged(p.hook, logrus.InfoLevel, "thread map has room again") != 1 {
		t.Error("the map having room again was not logged")
	}
	// The burster runs every 50 ms, so it has CPU time at each 100 ms tick; a loaded
	// machine may delay it past a few.
	if floodTicks < 5 || watchedRows < floodTicks/2 {
		t.Errorf("the tracked thread has CPU time in %d of the %d ticks while the map was full", watchedRows, floodTicks)
	}
}

// holdThreads starts n threads that each run once, then sleep until release closes.
func holdThreads(n int, release <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-release
		}()
	}
	return &wg
}

// waitTracked waits until the kernel side has a record of thread tid.
func waitTracked(t *testing.T, p *pipeline, tid int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		found := false
		p.tracker.Scan(0, 0, nil, func(_ uint32, th *state.Thread) { found = found || (th.Tid == tid && th.State != state.Dead) })
		if found {
			return
		}
	}
	t.Fatalf("thread %d got no record within 10 s", tid)
}
