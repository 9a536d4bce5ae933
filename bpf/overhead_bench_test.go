// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/test/privileged"
)

// hooks is a set of attached programs: the floor's or threadcap's.
type hooks struct {
	coll  *ebpf.Collection
	links []link.Link
}

// attachFloor attaches empty programs to the hooks threadcap uses: what any design built
// on these hooks pays, the baseline threadcap's own cost is measured against.
func attachFloor() (io.Closer, error) {
	spec, err := loadFloor()
	if err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, err
	}
	h := &hooks{coll: coll}
	for _, prog := range coll.Programs {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			h.Close()
			return nil, err
		}
		h.links = append(h.links, l)
	}
	return h, nil
}

func (h *hooks) Close() error {
	var errs []error
	for _, l := range h.links {
		errs = append(errs, l.Close())
	}
	h.coll.Close()
	return errors.Join(errs...)
}

// syscallLoop calls getppid(2) in a tight loop on one thread for d: calls per second.
func syscallLoop(d time.Duration) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for range 1000 {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
		n += 1000
	}
	return float64(n) / time.Since(start).Seconds()
}

// pingPong bounces a byte between two threads pinned to CPU 0 through two pipes for d:
// round trips per second. Every round trip is two wakeups and two context switches.
func pingPong(d time.Duration) float64 {
	var ab, ba [2]int
	if syscall.Pipe(ab[:]) != nil || syscall.Pipe(ba[:]) != nil {
		panic("pipe")
	}
	defer func() {
		for _, fd := range []int{ab[0], ab[1], ba[0], ba[1]} {
			syscall.Close(fd)
		}
	}()
	pin := func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		unix.SchedSetaffinity(0, &set)
	}
	done := make(chan struct{})
	go func() {
		pin()
		defer runtime.UnlockOSThread()
		buf := []byte{0}
		for {
			syscall.Read(ab[0], buf)
			if buf[0] == 'q' {
				close(done)
				return
			}
			syscall.Write(ba[1], buf)
		}
	}()
	pin()
	defer runtime.UnlockOSThread()
	buf := []byte{'p'}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for range 100 {
			syscall.Write(ab[1], buf)
			syscall.Read(ba[0], buf)
		}
		n += 100
	}
	elapsed := time.Since(start)
	syscall.Write(ab[1], []byte{'q'})
	<-done
	return float64(n) / elapsed.Seconds()
}

// BenchmarkHotPath measures what the hooks cost a workload, under four configurations
// interleaved round by round (the machine's noise hits them all alike): no tracer, the
// floor, and threadcap in full and passive syscall modes. It reports medians and ratios.
//
//	sudo go test -run '^$' -bench HotPath -benchtime 1x ./bpf/
func BenchmarkHotPath(b *testing.B) {
	privileged.Require(b)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	configs := []struct {
		name   string
		attach func() (io.Closer, error)
	}{
		{"none", func() (io.Closer, error) { return io.NopCloser(nil), nil }},
		{"floor", attachFloor},
		{"full", func() (io.Closer, error) { return Open(Config{Syscalls: SyscallsFull}) }},
		{"passive", func() (io.Closer, error) { return Open(Config{Syscalls: SyscallsPassive}) }},
	}
	workloads := []struct {
		name string
		run  func(time.Duration) float64
	}{{"syscall", syscallLoop}, {"pingpong", pingPong}}
	const rounds, span = 7, 300 * time.Millisecond
	results := map[string][]float64{}
	for range b.N {
		for round := range rounds {
			for i := range configs {
				c := configs[(i+round)%len(configs)]
				h, err := c.attach()
				if err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
				for _, w := range workloads {
					results[w.name+"/"+c.name] = append(results[w.name+"/"+c.name], w.run(span))
				}
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-9s %-8s %14s %8s %10s %10s\n", "workload", "config", "median ops/s", "spread", "vs none", "vs floor")
	for _, w := range workloads {
		none, floor := median(results[w.name+"/none"]), median(results[w.name+"/floor"])
		for _, c := range configs {
			r := results[w.name+"/"+c.name]
			m := median(r)
			spread := (slices.Max(r) - slices.Min(r)) / m
			fmt.Fprintf(&table, "%-9s %-8s %14.0f %7.1f%% %10.3f %10.3f\n", w.name, c.name, m, 100*spread, m/none, m/floor)
			b.ReportMetric(m/floor, w.name+"-"+c.name+"/floor")
		}
		b.ReportMetric(median(results[w.name+"/passive"])/none, w.name+"-passive/none")
	}
	b.Log(table.String())
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
