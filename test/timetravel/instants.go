// SPDX-License-Identifier: Apache-2.0

package timetravel

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The daemon labels a tick with its aligned instant but reads the threads when it gets to
// run, which on a loaded machine can be a good part of a second later. To compare its
// accounting with schedstat at the same instants, a watcher reads the spinner's schedstat
// and the current hour file every millisecond, and notes when each tick's rows appear:
// the threads were read just before.

// watchPeriod is how often the watcher looks.
const watchPeriod = time.Millisecond

// schedstatSample is the spinner's on-CPU time at one instant.
type schedstatSample struct {
	at    time.Time
	onCPU time.Duration
}

// observations is what the watcher saw.
type observations struct {
	schedstat []schedstatSample
	written   map[int64]time.Time // tick label (Unix ns) -> when its rows appeared
}

// watch starts the watcher on thread tid and the hour files of dir; the returned function
// stops it and returns what it saw.
func watch(tid int, dir string) func() observations {
	stop, done := make(chan struct{}), make(chan observations)
	path := "/proc/" + strconv.Itoa(tid) + "/schedstat"
	go func() {
		obs := observations{written: map[int64]time.Time{}}
		tail := hourTail{offsets: map[string]int64{}}
		last := time.Now()
		for {
			select {
			case <-stop:
				done <- obs
				return
			case <-time.After(watchPeriod):
			}
			if onCPU, ok := readSchedstat(path); ok {
				obs.schedstat = append(obs.schedstat, schedstatSample{time.Now(), onCPU})
			}
			now := time.Now()
			for _, tick := range tail.newTicks(dir) {
				if _, ok := obs.written[tick.UnixNano()]; !ok {
					// Written since the last look: halfway is the best guess.
					obs.written[tick.UnixNano()] = last.Add(now.Sub(last) / 2)
				}
			}
			last = now
		}
	}()
	return func() observations {
		close(stop)
		return <-done
	}
}

// readSchedstat is workload.Schedstat without a testing.T, for a goroutine.
func readSchedstat(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var onCPU int64
	_, err = fmt.Sscan(string(b), &onCPU)
	return time.Duration(onCPU), err == nil
}

// hourTail follows the current hour file as it grows.
type hourTail struct {
	offsets map[string]int64
	partial []byte
}

// newTicks returns the tick times of the rows appended to the newest hour file since the
// last call.
func (h *hourTail) newTicks(dir string) []time.Time {
	paths, _ := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
	if len(paths) == 0 {
		return nil
	}
	path := slices.Max(paths) // names sort by hour
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, seen := h.offsets[path]; !seen {
		h.partial = nil
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, h.offsets[path], 1<<30))
	h.offsets[path] += int64(len(b))
	b = append(h.partial, b...)
	end := bytes.LastIndexByte(b, '\n') + 1
	h.partial = slices.Clone(b[end:])
	var ticks []time.Time
	for _, line := range bytes.Split(b[:end], []byte{'\n'}) {
		field, _, _ := bytes.Cut(line, []byte{','})
		if t, err := time.Parse(time.RFC3339Nano, string(field)); err == nil {
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// cpuAt is the spinner's on-CPU time when the daemon read the threads for tick, found by
// interpolating schedstat at the moment the tick's rows were written, or at the tick's
// label when the watcher did not see them (a file it was not following).
func (o observations) cpuAt(t *testing.T, tick time.Time) time.Duration {
	t.Helper()
	at, ok := o.written[tick.UnixNano()]
	if !ok {
		at = tick
	}
	s := o.schedstat
	i, _ := slices.BinarySearchFunc(s, at, func(e schedstatSample, at time.Time) int { return e.at.Compare(at) })
	if i == 0 || i == len(s) {
		t.Fatalf("no schedstat reading around %v", at)
	}
	a, b := s[i-1], s[i]
	frac := float64(at.Sub(a.at)) / float64(b.at.Sub(a.at))
	return a.onCPU + time.Duration(frac*float64(b.onCPU-a.onCPU))
}
