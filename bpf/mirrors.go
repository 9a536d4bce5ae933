// SPDX-License-Identifier: Apache-2.0

package bpf

import "github.com/threadcap/threadcap/state"

// The state package, which cannot import this one, restates a few facts of the kernel
// side's headers: the states of enum tc_state and the histograms' bucket count. Each line
// here fails to compile when a restated fact no longer matches what bpf2go generated from
// the headers (an array index out of range, or arrays of different lengths).
var (
	_ = [1]struct{}{}[int(state.OnCPU)-int(threadcapTcStateTC_ON_CPU)]
	_ = [1]struct{}{}[int(state.Runnable)-int(threadcapTcStateTC_RUNNABLE)]
	_ = [1]struct{}{}[int(state.Sleeping)-int(threadcapTcStateTC_SLEEPING)]
	_ = [1]struct{}{}[int(state.Uninterruptible)-int(threadcapTcStateTC_UNINTERRUPTIBLE)]
	_ = [1]struct{}{}[int(state.Stopped)-int(threadcapTcStateTC_STOPPED)]
	_ = [1]struct{}{}[int(state.Dead)-int(threadcapTcStateTC_DEAD)]
	_ = [1]struct{}{}[state.TimedStates-int(threadcapTcStateTC_TIMED_STATES)]

	_ [state.IOBuckets]struct{}   = [len(ioTcIoStat{}.QueueHist)]struct{}{}
	_ [state.SpanBuckets]struct{} = [len(threadcapTcSpanStats{}.WallHist)]struct{}{}
)
