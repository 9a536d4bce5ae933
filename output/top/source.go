// SPDX-License-Identifier: Apache-2.0

package top

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/threadcap/threadcap/output/report"
)

// source answers the view's questions: output/report over a directory, or a fake in tests.
type source interface {
	Run(q report.Query) (*report.Result, error)
	Folded(q report.Query) ([]report.FoldedStack, error)
	Latency(w report.Window) (report.Latencies, error)
}

// reportSource is output/report over the hour files of dir: the one query engine.
type reportSource struct{ dir string }

func (s reportSource) Run(q report.Query) (*report.Result, error) { return report.Run(s.dir, q) }

func (s reportSource) Folded(q report.Query) ([]report.FoldedStack, error) {
	stacks, _, err := report.Folded(s.dir, q)
	return stacks, err
}

func (s reportSource) Latency(w report.Window) (report.Latencies, error) {
	return report.Latency(s.dir, w)
}

// resultMsg is a refresh's answer: the table's breakdown and the chart's timeline.
type resultMsg struct {
	gen       int
	window    report.Window
	context   report.Window // the chart's
	breakdown *report.Result
	timeline  *report.Result
	err       error
	took      time.Duration
}

// detailMsg is the answer for the selected group's stacks or latencies.
type detailMsg struct {
	gen        int
	stacks     []report.FoldedStack
	latency    report.Latencies
	latencyErr error                     // the spans' and disks' latencies could not be read
	syscalls   [report.HistBuckets]int64 // time in the syscall so far, at the group's active rows
	err        error
}

// safely runs f, turning a panic into an error: a bug met on odd input is one line on
// screen, never a terminal left in raw mode.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return f()
}

// queryCmd asks in the background for the table of q and the chart over context, in
// columns of step.
func queryCmd(src source, explain func(error) error, gen int, q report.Query, context report.Window, step time.Duration) tea.Cmd {
	return func() tea.Msg {
		start := time.Now()
		msg := resultMsg{gen: gen, window: q.Window, context: context}
		msg.err = safely(func() error {
			var err error
			if msg.breakdown, err = src.Run(q); err != nil {
				return err
			}
			tq := q
			tq.Window, tq.By, tq.Top, tq.Step = context, nil, 0, step
			msg.timeline, err = src.Run(tq)
			return err
		})
		if msg.err != nil {
			msg.err = explain(msg.err)
		}
		msg.took = time.Since(start)
		return msg
	}
}

// stacksCmd asks for the folded stacks of q's rows.
func stacksCmd(src source, explain func(error) error, gen int, q report.Query) tea.Cmd {
	return func() tea.Msg {
		msg := detailMsg{gen: gen}
		msg.err = safely(func() (err error) {
			msg.stacks, err = src.Folded(q)
			return err
		})
		if msg.err != nil {
			msg.err = explain(msg.err)
		}
		return msg
	}
}

// syscallColumn is the column whose values at the ticks the latency pane counts for the
// selected group: how long the syscall in progress had run.
const syscallColumn = "syscall_us"

// latencyCmd asks for the latencies of spans and disks over q's window, and for the
// histogram of the time its rows had been in their syscall at the ticks.
func latencyCmd(src source, explain func(error) error, gen int, q report.Query) tea.Cmd {
	return func() tea.Msg {
		msg := detailMsg{gen: gen}
		// The spans and io files may not be there (spans and io off): that is said in the
		// pane; the syscalls' histogram is still shown.
		msg.latencyErr = safely(func() (err error) {
			msg.latency, err = src.Latency(q.Window)
			return err
		})
		msg.err = safely(func() error {
			// One bucket for the whole window (two when it does not start on a second).
			hq := report.Query{Window: q.Window, Where: q.Where, BucketHist: syscallColumn,
				Step: max(q.Window.Duration().Round(time.Second), time.Second)}
			r, err := src.Run(hq)
			if err != nil {
				return err
			}
			for _, b := range r.Timeline {
				for i, n := range b.Hist {
					msg.syscalls[i] += n
				}
			}
			return nil
		})
		if msg.err != nil {
			msg.err = explain(msg.err)
		}
		if msg.latencyErr != nil {
			msg.latencyErr = explain(msg.latencyErr)
		}
		return msg
	}
}
