// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strconv"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// AppendCSV appends s as one CSV row in the layout of Columns, newline included, and returns
// the extended buffer. It does not allocate.
//
// Text fields are written by hourfile.AppendText, whose rules make every row read back with
// any RFC 4180 reader and safe to open in a spreadsheet.
func AppendCSV(dst []byte, s *state.Sample) []byte {
	dst = s.Time.Local().AppendFormat(dst, hourfile.TimeLayout)
	dst = appendInt(append(dst, ','), int64(s.Pid))
	dst = appendInt(append(dst, ','), int64(s.Tid))
	dst = hourfile.AppendText(append(dst, ','), s.Process)
	dst = hourfile.AppendText(append(dst, ','), s.Thread)
	dst = hourfile.AppendText(append(dst, ','), s.User)
	dst = hourfile.AppendText(append(dst, ','), s.State.String())
	dst = appendInt(append(dst, ','), s.StateUs)
	dst = hourfile.AppendText(append(dst, ','), s.Syscall)
	dst = appendInt(append(dst, ','), s.SyscallUs)
	dst = appendInt(append(dst, ','), s.SyscallCPUUs)
	dst = append(dst, ',')
	if s.Syscall != "" {
		for i, a := range s.Args {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = strconv.AppendUint(append(dst, '0', 'x'), a, 16)
		}
	}
	dst = appendInt(append(dst, ','), int64(s.CPU))
	for _, us := range s.StateTimeUs {
		dst = appendInt(append(dst, ','), us)
	}
	dst = appendInt(append(dst, ','), s.Voluntary)
	dst = appendInt(append(dst, ','), s.Involuntary)
	dst = hourfile.AppendText(append(dst, ','), s.Exe)
	dst = strconv.AppendBool(append(dst, ','), s.Seeded)
	dst = hourfile.AppendText(append(dst, ','), s.Wchan)
	dst = hourfile.AppendText(append(dst, ','), s.Cgroup)
	dst = hourfile.AppendText(append(dst, ','), s.FdTarget)
	dst = append(dst, ',')
	if s.KernelStack != nil {
		dst = hourfile.AppendText(dst, s.KernelStack.Hash)
	}
	dst = append(dst, ',')
	if s.UserStack != nil {
		dst = hourfile.AppendText(dst, s.UserStack.Hash)
	}
	if s.IODev == "" {
		dst = append(dst, ",,,,,"...)
	} else {
		dst = hourfile.AppendText(append(dst, ','), s.IODev)
		dst = append(append(dst, ','), s.IOOp...)
		dst = strconv.AppendInt(append(dst, ','), s.IOBytes, 10)
		dst = strconv.AppendInt(append(dst, ','), s.IOUs, 10)
		dst = strconv.AppendInt(append(dst, ','), s.IOQueueUs, 10)
	}
	dst = hourfile.AppendText(append(dst, ','), s.Span)
	dst = append(dst, ',')
	if s.Span != "" {
		dst = strconv.AppendInt(dst, s.SpanUs, 10)
	}
	dst = hourfile.AppendText(append(dst, ','), s.SpanArg)
	dst = hourfile.AppendText(append(dst, ','), s.Cmdline)
	dst = hourfile.AppendText(append(dst, ','), s.Container)
	dst = hourfile.AppendText(append(dst, ','), s.PodUID)
	dst = hourfile.AppendText(append(dst, ','), s.Unit)
	if s.TCP.State == "" {
		dst = append(dst, ",,,,,,,,"...)
	} else {
		dst = append(append(dst, ','), s.TCP.State...)
		for _, v := range [...]int64{s.TCP.SrttUs, s.TCP.Retrans, s.TCP.Lost, s.TCP.Cwnd, s.TCP.Unacked, s.TCP.RcvQueue, s.TCP.SndQueue} {
			dst = strconv.AppendInt(append(dst, ','), v, 10)
		}
	}
	dst = append(dst, ',')
	if s.StateTimeUs[state.Sleeping] != state.Unknown {
		dst = strconv.AppendBool(dst, s.SplitEstimated)
	}
	return append(dst, '\n')
}

// appendInt writes state.Unknown as an empty field, which DuckDB reads as NULL.
func appendInt(dst []byte, v int64) []byte {
	if v == state.Unknown {
		return dst
	}
	return strconv.AppendInt(dst, v, 10)
}
