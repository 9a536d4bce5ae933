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
	// rows, slots, asks and since are the rows of the batch whose episode was still open,
	// their records' slots, their asks and their episodes' starts.
	rows  []int
	slots []uint32
	asks  []bpf.KernelStackAsk
	since []uint64
}

// episode is a thread's stay in a state, by its start, and the stack it waits in: a
// snapshot keeps the last one given a stack, for the ticks after.
type episode struct {
	since uint64
	stack symbolize.KernelStack
}

func newDeferredStacks(src DeferredStackSource, states []state.State, log *logrus.Entry) *deferredStacks {
	return &deferredStacks{src: src, states: states, log: log, errLog: rateLimit{every: time.Minute},
		ended: map[int32][]uint64{}}
}

// begin takes, for the tick mono, the stacks walked as episodes it saw ended.
func (d *deferredStacks) begin(mono uint64, wall time.Time) {
	if d == nil {
		return
	}
	d.mono = mono
	clear(d.ended)
	if err := d.src.TickKernelStacks(mono, d.ended); err != nil && d.errLog.allow(wall) {
		d.log.WithError(err).Warn("reading kernel stacks failed")
	}
}

// add gives row (th's, to be the batch's row i; its record in slot, whose snapshot is p)
// its kernel stack if an earlier tick saw the same episode or it has ended, or asks for it.
func (d *deferredStacks) add(row *state.Sample, th *state.Thread, i int, slot uint32, p *snapshot, kstacks *symbolize.KernelStacks) {
	if row.Seeded || row.State == state.OnCPU || !slices.Contains(d.states, row.State) {
		return
	}
	if p.kstack.since == th.SinceNs && p.kstack.stack.Stack != nil {
		row.KernelStack, row.Wchan = p.kstack.stack.Stack, p.kstack.stack.Wchan
		return
	}
	if ips, ok := d.ended[th.Tid]; ok {
		ks := kstacks.FromIPs(ips)
		row.KernelStack, row.Wchan = ks.Stack, ks.Wchan
		p.kstack = episode{since: th.SinceNs, stack: ks}
		return
	}
	d.rows = append(d.rows, i)
	d.slots = append(d.slots, slot)
	d.asks = append(d.asks, bpf.KernelStackAsk{Tid: th.Tid, StartNs: th.StartNs})
	d.since = append(d.since, th.SinceNs)
}

// fill walks the stacks asked for the batch's rows. An episode that ended since the tick's
// read began was walked as it ended, and that stack is the one it had at the tick (those
// are taken after the walk, so none is missed); for the others, the walk now is.
func (d *deferredStacks) fill(rows []state.Sample, prev []snapshot, kstacks *symbolize.KernelStacks, wall time.Time) {
	if d == nil || len(d.rows) == 0 {
		return
	}
	defer func() { d.rows, d.slots, d.asks, d.since = d.rows[:0], d.slots[:0], d.asks[:0], d.since[:0] }()
	err := d.src.AskKernelStacks(d.asks)
	if err == nil {
		err = d.src.TickKernelStacks(d.mono, d.ended)
	}
	if err != nil {
		if d.errLog.allow(wall) {
			d.log.WithError(err).Warn("walking kernel stacks failed: rows off CPU lack theirs at this tick")
		}
		return
	}
	for j, i := range d.rows {
		ask := &d.asks[j]
		ips, ok := d.ended[ask.Tid]
		if !ok {
			ips = ask.Ips[:min(int(ask.Nr), len(ask.Ips))]
		}
		if len(ips) == 0 {
			continue
		}
		ks := kstacks.FromIPs(ips)
		rows[i].KernelStack, rows[i].Wchan = ks.Stack, ks.Wchan
		prev[d.slots[j]].kstack = episode{since: d.since[j], stack: ks}
	}
}
