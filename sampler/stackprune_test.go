// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/sampler/symbolize"
)

// fakeStacks is a stack map: ids to frames, and the ids the next prune deletes.
type fakeStacks struct {
	frames map[uint16][]uint64
	prune  []uint16
	pruned int // calls
}

func (f *fakeStacks) Stack(id uint16) ([]uint64, error) { return f.frames[id], nil }

func (f *fakeStacks) PruneStacks() ([]uint16, error) {
	f.pruned++
	deleted := f.prune
	for _, id := range deleted {
		delete(f.frames, id)
	}
	f.prune = nil
	return deleted, nil
}

// TestPrunedStackIDsAreForgotten: once an id is pruned, a record still naming it with a
// stack captured before the prune gets no stack, and one captured after gets the new
// stack stored under the id, not the old one cached.
func TestPrunedStackIDsAreForgotten(t *testing.T) {
	// symbolize's kallsyms fixture.
	path := filepath.Join("symbolize", "testdata", "kallsyms")
	log := logrus.New()
	log.SetOutput(io.Discard)
	src := &fakeStacks{frames: map[uint16][]uint64{
		// __schedule, then kernel_clone <- __x64_sys_vfork
		5: {0xffffffff82000110, 0xffffffff81200040, 0xffffffff81300010},
	}}
	mono := uint64(1000)
	ustacks, err := symbolize.NewUserStacks(src, "/proc")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sampler{
		cfg:     Config{Stacks: src, Mono: func() uint64 { return mono }, Log: logrus.NewEntry(log)},
		kstacks: symbolize.NewKernelStacks(src, path, logrus.NewEntry(log)), ustacks: ustacks,
	}
	if got := s.kstacks.Get(5).Wchan; got != "kernel_clone" {
		t.Fatalf("stack 5 waits in %q, want kernel_clone", got)
	}
	now := time.Now()
	src.prune = []uint16{5}
	s.pruneStacks(now)
	if s.stackValid(5, 900) || !s.stackValid(5, 1001) || !s.stackValid(6, 900) {
		t.Errorf("after pruning id 5 at 1000: valid(5, 900) %v, valid(5, 1001) %v, valid(6, 900) %v; want false, true, true",
			s.stackValid(5, 900), s.stackValid(5, 1001), s.stackValid(6, 900))
	}
	// The kernel side gives id 5 another stack: do_syscall_64 alone.
	src.frames[5] = []uint64{0xffffffff82000110, 0xffffffff81100020}
	if got := s.kstacks.Get(5).Wchan; got != "do_syscall_64" {
		t.Errorf("id 5 reused for another stack reads as waiting in %q, want do_syscall_64", got)
	}
	s.pruneStacks(now.Add(pruneEvery / 2))
	if src.pruned != 1 {
		t.Errorf("pruned %d times within %v, want once", src.pruned, pruneEvery)
	}
}
