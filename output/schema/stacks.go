// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// stacksHeader heads every stacks file (see StackColumns).
var stacksHeader = HeaderOf(StackColumns)

// StacksHeader is the first line of every stacks file, newline included.
func StacksHeader() string { return stacksHeader }

// AppendStackCSV appends one line of a stacks file.
func AppendStackCSV(dst []byte, s *state.Stack) []byte {
	dst = hourfile.AppendText(dst, s.Hash)
	dst = hourfile.AppendText(append(dst, ','), s.Frames)
	return append(dst, '\n')
}
