// SPDX-License-Identifier: Apache-2.0

package symbolize

import "testing"

// TestPrunedIDsAreInvalidForStacksCapturedBefore: a stack id pruned at 1000 no longer
// names a stack captured before then, still names one captured after, and ids no prune
// deleted stay valid.
func TestPrunedIDsAreInvalidForStacksCapturedBefore(t *testing.T) {
	var p Pruned
	if !p.Valid(5, 900) {
		t.Errorf("before any prune, id 5 is invalid")
	}
	p.Deleted([]uint16{5}, 1000)
	if p.Valid(5, 900) || !p.Valid(5, 1001) || !p.Valid(6, 900) {
		t.Errorf("after pruning id 5 at 1000: valid(5, 900) %v, valid(5, 1001) %v, valid(6, 900) %v; want false, true, true",
			p.Valid(5, 900), p.Valid(5, 1001), p.Valid(6, 900))
	}
}
