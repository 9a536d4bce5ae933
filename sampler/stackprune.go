// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/threadcap/threadcap/sampler/symbolize"
)

// pruneEvery is how often stacks no thread holds any more are deleted from the kernel
// side's stack map. Listing it costs a syscall per stack, so not at every tick; a stack
// that recurs is simply stored again, under the same id.
const pruneEvery = time.Minute

// stackPrune is when the stack map was last pruned, and which ids each prune deleted when
// (see symbolize.Pruned).
type stackPrune struct {
	last time.Time
	ids  symbolize.Pruned
}

// pruneStacks deletes unreferenced stacks once per pruneEvery and forgets what was cached
// for their ids.
func (s *Sampler) pruneStacks(wall time.Time) {
	if s.kstacks == nil || wall.Sub(s.prune.last) < pruneEvery {
		return
	}
	s.prune.last = wall
	deleted, err := s.cfg.Stacks.PruneStacks()
	s.prune.ids.Deleted(deleted, s.cfg.Mono())
	for _, id := range deleted {
		s.kstacks.Forget(id)
		s.ustacks.Forget(id)
	}
	if err != nil {
		s.cfg.Log.WithError(err).Warn("pruning the stack map failed; new stacks may be lost until it is pruned again")
	}
}

// stackValid reports whether stack id, captured at sinceNs, is still the stack stored under
// id.
func (s *Sampler) stackValid(id uint16, sinceNs uint64) bool {
	return s.prune.ids.Valid(id, sinceNs)
}
