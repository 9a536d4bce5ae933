// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/state"
)

// fakeProfile hands out one prepared Take at a time.
type fakeProfile struct {
	takes []fakeTake
}

type fakeTake struct {
	counts []bpf.ProfileCount
	stacks bpf.ProfileStacks
}

func (f *fakeProfile) Take() ([]bpf.ProfileCount, bpf.ProfileStacks, error) {
	t := f.takes[0]
	f.takes = f.takes[1:]
	return t.counts, t.stacks, nil
}

func (f *fakeProfile) Hz() int { return 99 }

type profileRows struct{ minutes [][]state.ProfileRow }

func (s *profileRows) WriteProfile(_ time.Time, rows []state.ProfileRow) error {
	s.minutes = append(s.minutes, rows)
	return nil
}

//go:noinline
func profileTarget(n int) int { return n * 3 }

// TestProfilerNamesAndMerges: a minute's counts become rows whose stacks are named like the
// rows' (kernel frames from kallsyms, user frames from the process's own binary); two
// addresses in one function are one line; and a stack id of the next minute meaning
// another stack is named anew, not from the last minute's cache.
func TestProfilerNamesAndMerges(t *testing.T) {
	pc := uint64(reflect.ValueOf(profileTarget).Pointer())
	pid := int32(os.Getpid())
	src := &fakeProfile{takes: []fakeTake{
		{
			counts: []bpf.ProfileCount{
				{Pid: pid, Tid: pid, Process: "p", Thread: "t", KernelStack: -1, UserStack: 1, Samples: 5},
				{Pid: pid, Tid: pid, Process: "p", Thread: "t", KernelStack: -1, UserStack: 2, Samples: 7},
				{Pid: pid, Tid: pid, Process: "p", Thread: "t", KernelStack: 0, UserStack: 1, Samples: 1},
				{Pid: pid, Tid: pid, Process: "p", Thread: "t", KernelStack: -1, UserStack: 2, Span: 1, Samples: 4},
			},
			stacks: bpf.ProfileStacks{
				0: {0xffffffff81100020},  // do_syscall_64
				1: {pc + 1}, 2: {pc + 2}, // the same function
			},
		},
		{
			counts: []bpf.ProfileCount{{Pid: 2, Tid: 3, Process: "kthreadd", Thread: "kworker", KernelStack: 0, UserStack: -1, Samples: 2}},
			stacks: bpf.ProfileStacks{0: {0xffffffff81200040}}, // kernel_clone
		},
	}}
	sink := &profileRows{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	p, err := NewProfiler(ProfileConfig{
		Source: src, Sink: sink, Kallsyms: filepath.Join("symbolize", "testdata", "kallsyms"),
		SpanNames: []string{"query"}, Wall: time.Now, Log: logrus.NewEntry(log),
	})
	if err != nil {
		t.Fatal(err)
	}
	minute := time.Now().Truncate(time.Minute)
	p.Write(minute)
	p.Write(minute.Add(time.Minute))
	if len(sink.minutes) != 2 {
		t.Fatalf("%d minutes written, want 2", len(sink.minutes))
	}
	first := sink.minutes[0]
	if len(first) != 3 {
		t.Fatalf("first minute: %d rows, want 3 (user stacks 1 and 2 name the same function; in a span, a line of its own): %+v", len(first), first)
	}
	if first[2].Span != "query" || first[2].Samples != 4 || first[0].Span != "" {
		t.Errorf("rows %+v, want the last in span query with 4 samples, the first in none", first)
	}
	if first[0].UserStack == nil || !strings.HasSuffix(first[0].UserStack.Frames, "sampler.profileTarget") {
		t.Errorf("user stack %+v, want it to end in sampler.profileTarget", first[0].UserStack)
	}
	if first[0].Samples != 12 || first[0].KernelStack != nil || first[0].Hz != 99 {
		t.Errorf("first row %+v, want 12 samples (5 + 7) at 99 Hz and no kernel stack", first[0])
	}
	if first[1].KernelStack == nil || first[1].KernelStack.Frames != "do_syscall_64" || first[1].Samples != 1 {
		t.Errorf("second row %+v, want do_syscall_64 and 1 sample", first[1])
	}
	second := sink.minutes[1]
	if len(second) != 1 || second[0].KernelStack == nil || second[0].KernelStack.Frames != "kernel_clone" || second[0].UserStack != nil {
		t.Errorf("second minute %+v, want kernel stack 0 named anew: kernel_clone", second)
	}
}

// TestProfilerSumsTakesOfAMinute: the takes of one minute are one line per thread and
// stacks, their samples summed, written once at the minute's end; a minute without
// samples writes nothing but an empty minute.
func TestProfilerSumsTakesOfAMinute(t *testing.T) {
	pc := uint64(reflect.ValueOf(profileTarget).Pointer())
	pid := int32(os.Getpid())
	take := func(id int32, n uint64) fakeTake {
		return fakeTake{
			counts: []bpf.ProfileCount{{Pid: pid, Tid: pid, Process: "p", Thread: "t", KernelStack: -1, UserStack: id, Samples: n}},
			stacks: bpf.ProfileStacks{id: {pc + 1}},
		}
	}
	src := &fakeProfile{takes: []fakeTake{take(3, 10), take(7, 20), take(3, 5), {}}}
	sink := &profileRows{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	p, err := NewProfiler(ProfileConfig{Source: src, Sink: sink, Kallsyms: filepath.Join("symbolize", "testdata", "kallsyms"),
		Wall: time.Now, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	minute := time.Now().Truncate(time.Minute)
	p.take(minute)
	p.take(minute.Add(10 * time.Second))
	if len(sink.minutes) != 0 {
		t.Fatalf("written before the minute's end: %v", sink.minutes)
	}
	p.Write(minute) // a third take, then the minute
	p.Write(minute.Add(time.Minute))
	if len(sink.minutes) != 2 || len(sink.minutes[0]) != 1 || sink.minutes[0][0].Samples != 35 || !sink.minutes[0][0].Minute.Equal(minute) {
		t.Fatalf("minutes %+v, want one line of 35 samples (10 + 20 + 5) in the first", sink.minutes)
	}
	if len(sink.minutes[1]) != 0 {
		t.Errorf("second minute %+v, want no line", sink.minutes[1])
	}
}
