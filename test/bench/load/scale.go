// SPDX-License-Identifier: Apache-2.0

package load

import (
	"fmt"
	"hash/fnv"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Scale is a server with many threads, few of them doing anything: Idle threads wait on
// a futex, as an idle pool thread waits on its condition variable, and Busy threads do a
// short unit of work every busyNap. It is what the sampler's cost per thread is measured
// on. Its throughput is the busy threads' units of work per second.
type Scale struct {
	idle, busy int
	// gen is the futex the idle threads wait on; Wake bumps it.
	gen   *uint32
	woken atomic.Int64 // idle thread wakeups, all threads together
	units atomic.Int64
	stop  atomic.Bool
	ended chan struct{}
}

// Linux futex(2) operations (linux/futex.h); golang.org/x/sys/unix does not name them.
const (
	futexWait    = 0
	futexWake    = 1
	futexPrivate = 128
)

// busyWork is the size of a busy thread's unit of work, and busyNap its pause after each.
const (
	busyWork = 16 << 10
	busyNap  = 10 * time.Millisecond
)

// NewScale starts the threads and returns once every idle one is waiting.
func NewScale(idle, busy int) *Scale {
	// Go refuses to run more than 10,000 threads unless told otherwise.
	debug.SetMaxThreads(idle + busy + 1000)
	s := &Scale{idle: idle, busy: busy, gen: new(uint32), ended: make(chan struct{}, idle+busy)}
	var started atomic.Int64
	for range idle {
		go s.idleThread(&started)
	}
	for range busy {
		go s.busyThread()
	}
	// A thread Linux refuses to create is fatal to a Go program, so this cannot wait
	// forever: the harness checks pid_max and threads-max first.
	for started.Load() < int64(idle) {
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

func (s *Scale) idleThread(started *atomic.Int64) {
	// Locked and never unlocked: each idle goroutine is a thread of its own, which ends
	// with it.
	runtime.LockOSThread()
	defer func() { s.ended <- struct{}{} }()
	started.Add(1)
	for seen := atomic.LoadUint32(s.gen); !s.stop.Load(); seen = atomic.LoadUint32(s.gen) {
		// Returns at once if gen moved on since it was read, so no wakeup is missed.
		syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(s.gen)), futexWait|futexPrivate,
			uintptr(seen), 0, 0, 0)
		if atomic.LoadUint32(s.gen) != seen {
			s.woken.Add(1)
		}
	}
}

func (s *Scale) busyThread() {
	runtime.LockOSThread()
	defer func() { s.ended <- struct{}{} }()
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

// Wake wakes every idle thread once and returns when all have run: a mostly idle thread
// still runs now and then, so the tracer has seen it, as it would on a server.
func (s *Scale) Wake() error {
	want := s.woken.Load() + int64(s.idle)
	atomic.AddUint32(s.gen, 1)
	s.futexWakeAll()
	for deadline := time.Now().Add(time.Minute); s.woken.Load() < want; {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d idle threads woke up in a minute",
				s.woken.Load()-want+int64(s.idle), s.idle)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (s *Scale) futexWakeAll() {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(s.gen)), futexWake|futexPrivate,
		uintptr(1<<31-1), 0, 0, 0)
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
	atomic.AddUint32(s.gen, 1)
	s.futexWakeAll()
	for range s.idle + s.busy {
		<-s.ended
	}
	return nil
}
