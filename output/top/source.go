// SPDX-License-Identifier: Apache-2.0

package top

import (
	"fmt"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/threadcap/threadcap/output/report"
)

// source answers the view's questions: output/report over a directory, or a fake in tests.
type source interface {
	Run(q report.Query) (*report.Result, error)
	// Live is Run's answers to q and to q's timeline over context in columns of step, for a
	// window that moves forward: live mode's, each second.
	Live(q report.Query, context report.Window, step time.Duration) (breakdown, timeline *report.Result, err error)
	Folded(q report.Query) ([]report.FoldedStack, error)
	Latency(w report.Window) (report.Latencies, error)
}

// reportSource is output/report over the hour files of dir: the one query engine. Live
// mode's answers come from a report.Follower, which reads each row once, for as long as
// the grouping and filters stay the same.
type reportSource struct {
	dir string

	mu        sync.Mutex
	follower  *report.Follower
	following string // the By and Where it follows
}

func (s *reportSource) Run(q report.Query) (*report.Result, error) { return report.Run(s.dir, q) }

func (s *reportSource) Live(q report.Query, context report.Window, step time.Duration) (breakdown, timeline *report.Result, err error) {
	f, err := s.followerFor(q)
	if err != nil {
		return nil, nil, err
	}
	return f.Answer(q.Window, context, step)
}

// followerFor is the follower of q's By and Where, a new one when they changed.
func (s *reportSource) followerFor(q report.Query) (*report.Follower, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%q %q", q.By, q.Where)
	if s.follower != nil && key == s.following {
		return s.follower, nil
	}
	if s.follower != nil {
		s.follower.Close()
	}
	f, err := report.NewFollower(s.dir, q.By, q.Where)
	if err != nil {
		return nil, err
	}
	s.follower, s.following = f, key
	return f, nil
}

func (s *reportSource) Folded(q report.Query) ([]report.FoldedStack, error) {
	stacks, _, err := report.Folded(s.dir, q)
	return stacks, err
}

func (s *reportSource) Latency(w report.Window) (report.Latencies, error) {
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
// columns of step; live, of a window that moves forward.
func queryCmd(src source, explain func(error) error, gen int, q report.Query, context report.Window, step time.Duration, live bool) tea.Cmd {
	return func() tea.Msg {
		start := time.Now()
		msg := resultMsg{gen: gen, window: q.Window, context: context}
		msg.err = safely(func() error {
			var err error
			if live {
				msg.breakdown, msg.timeline, err = src.Live(q, context, step)
				return err
			}
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
