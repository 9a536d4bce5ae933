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
	gen     int
	stacks  []report.FoldedStack
	latency report.Latencies
	err     error
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

// latencyCmd asks for the latencies of spans and disks over w.
func latencyCmd(src source, explain func(error) error, gen int, w report.Window) tea.Cmd {
	return func() tea.Msg {
		msg := detailMsg{gen: gen}
		msg.err = safely(func() (err error) {
			msg.latency, err = src.Latency(w)
			return err
		})
		if msg.err != nil {
			msg.err = explain(msg.err)
		}
		return msg
	}
}
