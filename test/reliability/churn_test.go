// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/workload"
)

// Churn: the numbers RELIABILITY.md quotes.
const (
	churnBatches      = 400
	threadsPerBatch   = 500                                        // 200,000 threads
	processesPerBatch = 50                                         // 20,000 processes
	churnPace         = 150 * time.Millisecond                     // 400 batches: about a minute
	heapGrowthBound   = 32 << 20                                   // bytes, after GC
	clockTicksPerSec  = 100                                        // USER_HZ, the unit of /proc/PID/stat starttime
	startSlack        = 2 * uint64(time.Second) / clockTicksPerSec // its rounding, in ns
)

// processBatch is one shell that forks processesPerBatch short-lived children: most are
// subshells (fork and exit), one in ten execs /bin/true (fork, exec, exit).
var processBatch = fmt.Sprintf(
	"i=0; while [ $i -lt %d ]; do (:); i=$((i+1)); done; j=0; while [ $j -lt %d ]; do /bin/true; j=$((j+1)); done",
	processesPerBatch*9/10, processesPerBatch/10)

// TestChurn runs 200,000 short-lived threads and 20,000 short-lived processes through the
// real pipeline at 20 Hz, then checks that no record of a thread that is gone stayed in the
// kernel's map, that no thread went untracked, that every row reached a valid file, and
// that the heap did not grow past the bound.
func TestChurn(t *testing.T) {
	p := startPipeline(t, options{interval: 50 * time.Millisecond})
	time.Sleep(time.Second) // past the first ticks' seeding and the process cache's filling
	heapBefore := heapInUse()

	start := time.Now()
	var shells sync.WaitGroup
	pace := time.NewTicker(churnPace)
	for range churnBatches {
		cmd := exec.Command("sh", "-c", processBatch)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shells.Add(1)
		go func() {
			defer shells.Done()
			if err := cmd.Wait(); err != nil {
				t.Errorf("process batch: %v", err)
			}
		}()
		workload.ShortThreads(threadsPerBatch)
		<-pace.C
	}
	pace.Stop()
	shells.Wait()
	elapsed := time.Since(start)

	// Let the last exits reach the map and a few ticks free their slots.
	time.Sleep(500 * time.Millisecond)
	p.stop(t)
	if err := p.sampler.Tick(time.Now()); err != nil {
		t.Fatal(err)
	}
	// A thread leaves /proc a moment before its last switch-out marks its record dead, so
	// a record is leaked only if it still holds a thread that is gone a few ticks later.
	suspects := map[uint32]int32{}
	p.tracker.Scan(0, 0, nil, func(slot uint32, th *state.Thread) {
		if th.State != state.Dead && !alive(th) {
			suspects[slot] = th.Tid
		}
	})
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		if err := p.sampler.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	leaked, live := 0, 0
	p.tracker.Scan(0, 0, nil, func(slot uint32, th *state.Thread) {
		switch {
		case th.State == state.Dead:
		case suspects[slot] == th.Tid && !alive(th):
			leaked++
			if leaked <= 5 {
				t.Errorf("slot %d holds thread %d (%s), which no longer exists", slot, th.Tid, th.Name())
			}
		default:
			live++
		}
	})
	heapAfter := heapInUse()
	st := p.sampler.Stats()
	if err := p.writer.Close(); err != nil {
		t.Fatal(err)
	}
	rows := readHours(t, p.dir)
	t.Logf("%d threads and %d processes in %v; %d ticks, %d skipped, %d rows; slots used %d of %d, "+
		"%d live records, %d leaked; untracked %d; heap %.1f -> %.1f MiB",
		churnBatches*threadsPerBatch, churnBatches*(processesPerBatch+1), elapsed.Round(time.Second),
		st.Ticks, st.SkippedTicks, st.Rows, p.tracker.Slots(), p.tracker.Capacity(), live, leaked,
		st.UntrackedThreads, float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20))

	if leaked > 0 {
		t.Errorf("%d records of threads that are gone were never given back", leaked)
	}
	if st.UntrackedThreads != 0 {
		t.Errorf("%d threads went untracked with room for %d", st.UntrackedThreads, p.tracker.Capacity())
	}
	if p.writer.DroppedRows() != 0 || uint64(len(rows)) != st.Rows {
		t.Errorf("the sampler made %d rows, the files hold %d, %d were dropped", st.Rows, len(rows), p.writer.DroppedRows())
	}
	if growth := int64(heapAfter) - int64(heapBefore); growth > heapGrowthBound {
		t.Errorf("heap grew by %.1f MiB over the churn, bound %d MiB", float64(growth)/(1<<20), heapGrowthBound>>20)
	}
}

// alive reports whether th's thread still exists: its tid exists and started when the
// record says (tids are reused: pid_max is 32768 here, and the churn wraps it).
func alive(th *state.Thread) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(th.Tid)) + "/stat")
	if err != nil {
		return false
	}
	// The fields after the comm, which may hold spaces and parentheses; starttime is the
	// 22nd field of the line, the 20th after the comm.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 20 {
		return false
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return false
	}
	started := ticks * uint64(time.Second) / clockTicksPerSec
	return started+startSlack >= th.StartNs && th.StartNs+startSlack >= started
}

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
