// SPDX-License-Identifier: Apache-2.0

package load

import (
	"errors"
	"hash/fnv"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Scale is a server with many threads, few of them doing anything: Idle threads wait to
// be woken (in futex(2), where an idle pool thread waits on its condition variable), and
// Busy threads do a short unit of work every busyNap. It is what the sampler's cost per
// thread is measured on. Its throughput is the busy threads' units of work per second.
//
// An idle thread is a goroutine locked to its thread and blocked on a channel: Go parks
// the thread in futex and gives its P away at once. A thread blocked in a syscall of its
// own would keep its P until Go's monitor took it back, and 50,000 of them woken together
// then queue for minutes.
type Scale struct {
	idle, busy int
	mu         sync.Mutex
	bell       chan struct{} // closed to wake every idle thread; guarded by mu
	woken      atomic.Int64  // idle thread wakeups, all threads together
	units      atomic.Int64
	stop       atomic.Bool
	ended      sync.WaitGroup
}

// busyWork is the size of a busy thread's unit of work, and busyNap its pause after each.
const (
	busyWork = 16 << 10
	busyNap  = 10 * time.Millisecond
)

// NewScale starts the threads and returns once every idle one is waiting.
func NewScale(idle, busy int) *Scale {
	// Go refuses to run more than 10,000 threads unless told otherwise.
	debug.SetMaxThreads(idle + busy + 1000)
	spreadFutexes()
	s := &Scale{idle: idle, busy: busy, bell: make(chan struct{})}
	var started sync.WaitGroup
	started.Add(idle)
	s.ended.Add(idle + busy)
	for range idle {
		go s.idleThread(&started)
	}
	for range busy {
		go s.busyThread()
	}
	// A thread Linux refuses to create is fatal to a Go program, so this cannot wait
	// forever: the harness checks pid_max and threads-max first.
	started.Wait()
	return s
}

// spreadFutexes has the kernel hash this process's futexes into its global table. Since
// Linux 6.16 a process gets a private table sized by the CPUs (16 slots on 2 CPUs), where
// the futexes of 50,000 parked threads queue thousands deep: waking them all takes
// minutes. Older kernels refuse the request and hash globally anyway.
func spreadFutexes() {
	unix.Prctl(unix.PR_FUTEX_HASH, unix.PR_FUTEX_HASH_SET_SLOTS, 0, 0, 0)
}

// ring is the bell the next Wake closes.
func (s *Scale) ring() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bell
}

func (s *Scale) idleThread(started *sync.WaitGroup) {
	// Locked and never unlocked: each idle goroutine is a thread of its own, which ends
	// with it.
	runtime.LockOSThread()
	defer s.ended.Done()
	// Holding the bell before it counts as started (or woken), no thread misses a Wake.
	bell := s.ring()
	started.Done()
	for {
		<-bell
		if s.stop.Load() {
			return
		}
		bell = s.ring()
		s.woken.Add(1)
	}
}

func (s *Scale) busyThread() {
	runtime.LockOSThread()
	defer s.ended.Done()
	buf := make([]byte, busyWork)
	h := fnv.New64a()
	for !s.stop.Load() {
		h.Reset()
		h.Write(buf)
		buf[0] = byte(h.Sum64())
		s.units.Add(1)
		time.Sleep(busyNap)
	}
}

// wakeAll wakes every idle thread and hangs a new bell for the next time.
func (s *Scale) wakeAll() {
	s.mu.Lock()
	old := s.bell
	s.bell = make(chan struct{})
	s.mu.Unlock()
	close(old)
}

// Wake wakes every idle thread once and returns when all have run: a mostly idle thread
// still runs now and then, so the tracer has seen it, as it would on a server.
func (s *Scale) Wake() error {
	want := s.woken.Load() + int64(s.idle)
	s.wakeAll()
	for deadline := time.Now().Add(time.Minute); s.woken.Load() < want; {
		if time.Now().After(deadline) {
			return errors.New("the idle threads did not all wake up within a minute")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Run reports the busy threads' units of work per second.
func (s *Scale) Run(d time.Duration) (Result, error) {
	start := time.Now()
	before := s.units.Load()
	time.Sleep(d)
	return Result{OpsPerSec: float64(s.units.Load()-before) / time.Since(start).Seconds()}, nil
}

// Close ends every thread and waits for them.
func (s *Scale) Close() error {
	s.stop.Store(true)
	s.wakeAll()
	s.ended.Wait()
	return nil
}
