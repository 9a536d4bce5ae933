// SPDX-License-Identifier: Apache-2.0

package symbolize

// Pruned remembers when each pruned stack id was deleted. A record that refers to such
// an id with a stack captured before then (a record given the id while the prune ran) may
// point at another stack by now, so its row gets none; one captured after is the new stack.
type Pruned struct {
	deletedAt map[uint16]uint64 // by id, the Mono time the prune that deleted it ended
}

// Deleted records that a prune which ended at end (Mono time) deleted ids.
func (p *Pruned) Deleted(ids []uint16, end uint64) {
	if p.deletedAt == nil {
		p.deletedAt = map[uint16]uint64{}
	}
	for _, id := range ids {
		p.deletedAt[id] = end
	}
}

// Valid reports whether stack id, captured at sinceNs, is still the stack stored under
// id.
func (p *Pruned) Valid(id uint16, sinceNs uint64) bool {
	return sinceNs > p.deletedAt[id]
}
