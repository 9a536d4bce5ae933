// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// With the kernel stacks of every sleep deferred (stacks off-cpu, kernel only), the whole
// machine at --all for 3 s at 10 Hz: a thread in nanosleep and one blocked reading a FIFO
// have, at every tick, the stack they wait in; and the stacks walked, as episodes a tick
// saw ended or still open at the read, are no more than the rows that carry one: an
// episode that begins and ends between two ticks is not walked, and one seen at several
// ticks is walked once or twice.
func TestDeferredStacksOfSleepers(t *testing.T) {
	privileged.Require(t)
	tr, err := bpf.Open(bpf.Config{Stacks: bpf.StacksOffCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.DeferredStacks() == nil {
		t.Skip("the kernel lacks bpf_task_from_pid (Linux 6.2): stacks are walked at every switch-out")
	}
	sleeper := workload.Sleeper(t)
	reader, _ := workload.FifoReader(t)
	log := logrus.New()
	log.SetOutput(io.Discard)
	rec := &recorder{t: t}
	s, err := sampler.New(sampler.Config{
		Interval: 100 * time.Millisecond, Filter: sampler.Filter{All: true}, Self: -1,
		Mono: bpf.Now, Wall: time.Now, Stacks: tr, Log: logrus.NewEntry(log),
	}, tr, rec)
	if err != nil {
		t.Fatal(err)
	}
	before, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := tr.StackWalks()
	if err != nil {
		t.Fatal(err)
	}
	var withStack, offCPU int
	waits := map[int]struct{ rows, right int }{}
	for _, tk := range rec.ticks[1:] {
		for _, row := range tk.rows {
			if row.State != state.Sleeping && row.State != state.Uninterruptible || row.Seeded {
				continue
			}
			offCPU++
			if row.KernelStack != nil {
				withStack++
			}
			for tid, in := range map[int]string{sleeper.Tid: "nanosleep", reader.Tid: "pipe_read"} {
				if int(row.Tid) != tid {
					continue
				}
				w := waits[tid]
				w.rows++
				if row.KernelStack != nil && strings.Contains(row.KernelStack.Frames, in) {
					w.right++
				}
				waits[tid] = w
			}
		}
	}
	t.Logf("%d ticks: %d rows off CPU, %d with a kernel stack; %d stacks walked; sleeper %+v, FIFO reader %+v",
		len(rec.ticks), offCPU, withStack, after-before, waits[sleeper.Tid], waits[reader.Tid])
	for tid, name := range map[int]string{sleeper.Tid: "the thread in nanosleep", reader.Tid: "the FIFO reader"} {
		if w := waits[tid]; w.rows < 20 || w.right < w.rows {
			t.Errorf("%s: %d of its %d rows asleep carry the stack it waits in, want all of at least 20", name, w.right, w.rows)
		}
	}
	if after-before > uint64(withStack) {
		t.Errorf("%d stacks walked for %d rows with a stack", after-before, withStack)
	}
}
