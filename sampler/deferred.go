// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/sampler/symbolize"
	"github.com/threadcap/threadcap/state"
)

// deferredStacks gives the rows off CPU in a state that gets a stack their kernel stack,
// when the kernel side walks only the episodes a tick sees (DeferredStackSource): the
// stack walked as the episode ended, if it ended after the tick, else one walked now, in
// one run for the rows of a batch, since the episode has not ended. An episode seen at
// several ticks is walked at the first: the same episode (the same start) waits in the
// same place. A nil *deferredStacks does nothing.
type deferredStacks struct {
	src    DeferredStackSource
	states []state.State
	log    *logrus.Entry
	errLog rateLimit
	mono   uint64
	ended  map[int32][]uint64 // stacks of the tick's episodes that had ended by its read
	// seen and last are, by thread, the episodes given a stack at this tick and the one
	// before, and their stacks.
	seen, last map[int32]episode
	// rows, asks and since are the rows of the batch whose episode was still open, their
	// asks and their episodes' starts.
	rows  []int
	asks  []bpf.KernelStackAsk
	since []uint64
}

// episode is a thread's stay in a state, by its start, and the stack it waits in.
type episode struct {
	since uint64
	stack symbolize.KernelStack
}

func newDeferredStacks(src DeferredStackSource, states []state.State, log *logrus.Entry) *deferredStacks {
	return &deferredStacks{src: src, states: states, log: log, errLog: rateLimit{every: time.Minute},
		ended: map[int32][]uint64{}, seen: map[int32]episode{}, last: map[int32]episode{}}
}

// begin takes, for the tick mono, the stacks walked as episodes it saw ended.
func (d *deferredStacks) begin(mono uint64, wall time.Time) {
	if d == nil {
		return
	}
	d.mono = mono
	d.seen, d.last = d.last, d.seen
	clear(d.seen)
	clear(d.ended)
	if err := d.src.TickKernelStacks(mono, d.ended); err != nil && d.errLog.allow(wall) {
		d.log.WithError(err).Warn("reading kernel stacks failed")
	}
}

// add gives row (th's, to be the batch's row i) its kernel stack if the episode has ended,
// or asks for it.
func (d *deferredStacks) add(row *state.Sample, th *state.Thread, i int, kstacks *symbolize.KernelStacks) {
	if row.Seeded || row.State == state.OnCPU || !slices.Contains(d.states, row.State) {
		return
	}
	if e, ok := d.last[th.Tid]; ok && e.since == th.SinceNs {
		d.give(row, th, e.stack)
		return
	}
	if ips, ok := d.ended[th.Tid]; ok {
		d.give(row, th, kstacks.FromIPs(ips))
		return
	}
	d.rows = append(d.rows, i)
	d.asks = append(d.asks, bpf.KernelStackAsk{Tid: th.Tid, StartNs: th.StartNs})
	d.since = append(d.since, th.SinceNs)
}

// give gives row the stack of th's episode, and keeps it for the next tick.
func (d *deferredStacks) give(row *state.Sample, th *state.Thread, ks symbolize.KernelStack) {
	row.KernelStack, row.Wchan = ks.Stack, ks.Wchan
	if ks.Stack != nil {
		d.seen[th.Tid] = episode{since: th.SinceNs, stack: ks}
	}
}

// fill walks the stacks asked for the batch's rows. An episode that ended since the tick's
// read began was walked as it ended, and that stack is the one it had at the tick; for
// the others, the walk now is.
func (d *deferredStacks) fill(rows []state.Sample, kstacks *symbolize.KernelStacks, wall time.Time) {
	if d == nil || len(d.rows) == 0 {
		return
	}
	defer func() { d.rows, d.asks, d.since = d.rows[:0], d.asks[:0], d.since[:0] }()
	if err := d.src.AskKernelStacks(d.asks); err != nil {
		if d.errLog.allow(wall) {
			d.log.WithError(err).Warn("walking kernel stacks failed: rows off CPU lack theirs at this tick")
		}
		return
	}
	for j, i := range d.rows {
		ask := &d.asks[j]
		ips := d.src.TickKernelStack(ask.Tid, d.mono)
		if ips == nil {
			ips = ask.Ips[:min(int(ask.Nr), len(ask.Ips))]
		}
		if len(ips) == 0 {
			continue
		}
		ks := kstacks.FromIPs(ips)
		rows[i].KernelStack, rows[i].Wchan = ks.Stack, ks.Wchan
		if ks.Stack != nil {
			d.seen[ask.Tid] = episode{since: d.since[j], stack: ks}
		}
	}
}
