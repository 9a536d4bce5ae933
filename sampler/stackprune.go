// SPDX-License-Identifier: Apache-2.0

package sampler

import "time"

// pruneEvery is how often stacks no thread holds any more are deleted from the kernel
// side's stack map. Listing it costs a syscall per stack, so not at every tick; a stack
// that recurs is simply stored again, under the same id.
const pruneEvery = time.Minute

// stackPrune remembers when each pruned stack id was deleted. A record that refers to such
// an id with a stack captured before then (a record given the id while the prune ran) may
// point at another stack by now, so its row gets none; one captured after is the new stack.
type stackPrune struct {
	last      time.Time
	deletedAt map[uint16]uint64 // by id, the Mono time the prune that deleted it ended
}

// pruneStacks deletes unreferenced stacks once per pruneEvery and forgets what was cached
// for their ids.
func (s *Sampler) pruneStacks(wall time.Time) {
	if s.kstacks == nil || wall.Sub(s.prune.last) < pruneEvery {
		return
	}
	s.prune.last = wall
	deleted, err := s.cfg.Stacks.PruneStacks()
	end := s.cfg.Mono()
	if s.prune.deletedAt == nil {
		s.prune.deletedAt = map[uint16]uint64{}
	}
	for _, id := range deleted {
		s.prune.deletedAt[id] = end
		delete(s.kstacks.byID, id)
		s.ustacks.forget(id)
	}
	if err != nil {
		s.cfg.Log.WithError(err).Warn("pruning the stack map failed; new stacks may be lost until it is pruned again")
	}
}

// stackValid reports whether stack id, captured at sinceNs, is still the stack stored
// under id.
func (s *Sampler) stackValid(id uint16, sinceNs uint64) bool {
	return sinceNs > s.prune.deletedAt[id]
}
