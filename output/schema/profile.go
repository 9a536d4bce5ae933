// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strconv"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// ProfileColumns are the profile file's columns, in order.
var ProfileColumns = []Column{
	{"minute", TypeTimestampTZ, "", "Start of the minute the samples were taken in, in the local time zone of threadcap."},
	{"pid", TypeInteger, "", "Process ID (thread group ID)."},
	{"tid", TypeInteger, "", "Thread ID."},
	{"process", TypeVarchar, "", "Process name (its main thread's comm) at the first of these samples." + hourfile.TextNote},
	{"thread", TypeVarchar, "", "Thread name (comm) at the first of these samples." + hourfile.TextNote},
	{"kernel_stack", TypeVarchar, "", "Hash of the kernel stack the samples interrupted, from the code interrupted outwards; empty for samples in user code (and when the stack map had no room for it). The hour's threadcap_stacks_ file has its frames."},
	{"user_stack", TypeVarchar, "", "Hash of the user-space stack of the samples (a frame-pointer walk); empty for kernel threads (and when lost). Its frames are in the same stacks file."},
	{"samples", TypeBigint, "", "Samples of the thread on CPU with these stacks in the minute."},
	{"hz", TypeInteger, "Hz", "The profile's rate (profile.hz): each sample stands for 1/hz s of CPU time."},
	{"span", TypeVarchar, "", "The innermost configured span (spans in the config) the thread was in at these samples, such as query; empty when none."},
}

// profileHeader heads every profile file.
var profileHeader = HeaderOf(ProfileColumns)

// ProfileHeader is the first line of every profile file, newline included.
func ProfileHeader() string { return profileHeader }

// ProfileMarkdownTable renders the profile files' columns as the README documents them.
func ProfileMarkdownTable() string { return markdownTable(ProfileColumns) }

// AppendProfileCSV appends one line of a profile file.
func AppendProfileCSV(dst []byte, r *state.ProfileRow) []byte {
	dst = r.Minute.Local().AppendFormat(dst, hourfile.TimeLayout)
	dst = strconv.AppendInt(append(dst, ','), int64(r.Pid), 10)
	dst = strconv.AppendInt(append(dst, ','), int64(r.Tid), 10)
	dst = hourfile.AppendText(append(dst, ','), r.Process)
	dst = hourfile.AppendText(append(dst, ','), r.Thread)
	for _, st := range [...]*state.Stack{r.KernelStack, r.UserStack} {
		dst = append(dst, ',')
		if st != nil {
			dst = append(dst, st.Hash...)
		}
	}
	dst = strconv.AppendUint(append(dst, ','), r.Samples, 10)
	dst = strconv.AppendInt(append(dst, ','), int64(r.Hz), 10)
	dst = hourfile.AppendText(append(dst, ','), r.Span)
	return append(dst, '\n')
}
