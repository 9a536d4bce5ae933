// SPDX-License-Identifier: Apache-2.0

package state

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Stack is a symbolized call stack, shared by every row that shows it: rows carry its
// hash, and each hour's stacks file maps the hash to the frames once.
type Stack struct {
	// Hash is 16 hex digits of the FNV-1a hash of Frames: the same stack has the same
	// hash in every hour, on every host running the same binaries.
	Hash string
	// Frames are function names, outermost first, separated by ';': the folded form
	// flame graph tools read.
	Frames string
}

// NewStack makes the Stack of frames given outermost first.
func NewStack(frames []string) *Stack {
	folded := strings.Join(frames, ";")
	h := fnv.New64a()
	h.Write([]byte(folded))
	hash := strconv.FormatUint(h.Sum64(), 16)
	return &Stack{Hash: strings.Repeat("0", 16-len(hash)) + hash, Frames: folded}
}
