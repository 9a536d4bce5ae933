// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cilium/ebpf"

	"github.com/threadcap/threadcap/state"
)

// StackMode says at which switch-outs a thread's stacks are captured.
type StackMode string

const (
	// StacksUninterruptible captures the stacks of threads entering D state (disk I/O,
	// vfork, uninterruptible locks): rare enough to cost nothing measurable.
	StacksUninterruptible StackMode = "uninterruptible"
	// StacksOffCPU captures them at every sleep too, which costs a stack walk per
	// voluntary context switch.
	StacksOffCPU StackMode = "off-cpu"
	// StacksOff captures none.
	StacksOff StackMode = "off"
)

// ParseStackMode accepts "uninterruptible", "off-cpu" or "off".
func ParseStackMode(s string) (StackMode, error) {
	switch m := StackMode(s); m {
	case StacksUninterruptible, StacksOffCPU, StacksOff:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a mode: use %s, %s or %s", s, StacksUninterruptible, StacksOffCPU, StacksOff)
}

// Stack map sizes: stacks are kept once per distinct stack, and ids must fit the record's
// 16 bits.
const (
	DefaultStackEntries = 16384
	MaxStackEntries     = 0xfffe
)

// States are the states at whose switch-outs mode m captures a thread's stacks: the rows
// that should carry a kernel stack are those off CPU in one of them. None for StacksOff or
// an unknown mode.
func (m StackMode) States() []state.State {
	switch m {
	case StacksUninterruptible:
		return []state.State{state.Uninterruptible}
	case StacksOffCPU:
		return []state.State{state.Uninterruptible, state.Sleeping}
	}
	return nil
}

// stackStates is the stack_states bit mask for a mode.
func stackStates(m StackMode) (uint8, error) {
	if _, err := ParseStackMode(string(m)); err != nil {
		return 0, err
	}
	var mask uint8
	for _, st := range m.States() {
		mask |= 1 << st
	}
	return mask, nil
}

// deferStacks says whether cfg's kernel stacks off CPU can be walked only for the
// episodes a tick sees (kstacks.go), on a kernel that allows it: kernel stacks only (a
// user stack can only be walked by its own thread, at its switch-out), outside the
// hook-free mode, which has no switch-out to walk at.
func deferStacks(cfg Config) bool {
	mask, err := stackStates(cfg.Stacks)
	return err == nil && mask != 0 && !cfg.UserStacks && cfg.Syscalls != SyscallsTick && !walkAtSwitchOut
}

// walkAtSwitchOut makes the kernel side walk kernel stacks at every switch-out, as it
// does on kernels before 6.2, where it could defer them: tests of that path set it.
var walkAtSwitchOut bool

// configureStacks sizes the stack map and sets what is captured. With stacks off the map
// keeps one entry, so it costs no memory. deferred walks kernel stacks off CPU only for
// the episodes a tick sees.
func configureStacks(spec *ebpf.CollectionSpec, cfg Config, deferred bool) error {
	mask, err := stackStates(cfg.Stacks)
	if err != nil {
		return err
	}
	if cfg.StackEntries > MaxStackEntries {
		return fmt.Errorf("stack entries %d is more than %d: use a smaller number", cfg.StackEntries, MaxStackEntries)
	}
	entries := cfg.StackEntries
	if entries == 0 {
		entries = DefaultStackEntries
	}
	user := uint8(0)
	if cfg.UserStacks && mask != 0 {
		user = 1
	}
	if mask == 0 {
		entries = 1
	}
	spec.Maps[threadcapMapStacks].MaxEntries = entries
	if err := spec.Variables[threadcapVarStackStates].Set(mask); err != nil {
		return fmt.Errorf("setting stack states: %w", err)
	}
	if err := spec.Variables[threadcapVarUserStacks].Set(user); err != nil {
		return fmt.Errorf("setting user stacks: %w", err)
	}
	if deferred {
		if err := spec.Variables[threadcapVarDeferredStacks].Set(uint8(1)); err != nil {
			return fmt.Errorf("setting deferred stacks: %w", err)
		}
	} else {
		spec.Maps[threadcapMapTickKstacks].MaxEntries = 1
	}
	// A thread on CPU at a tick gets the stacks a switch-out would give it: taken by a
	// timer once per tick, they cost a walk per running thread and tick, not per switch.
	var tick threadcapTcTickStack
	if mask != 0 {
		tick |= threadcapTcTickStackTC_TICK_KERNEL_STACK
	}
	if user != 0 {
		tick |= threadcapTcTickStackTC_TICK_USER_STACK
	}
	if err := spec.Variables[threadcapVarTickStacks].Set(tick); err != nil {
		return fmt.Errorf("setting stacks at the tick: %w", err)
	}
	return nil
}

// Stack returns the frames of stack id, as a record holds it (id + 1), innermost first.
// An id means the same stack until PruneStacks deletes it.
func (t *Tracker) Stack(id uint16) ([]uint64, error) {
	if id == 0 {
		return nil, nil
	}
	m := t.coll.Maps[threadcapMapStacks]
	frames := make([]uint64, m.ValueSize()/8)
	if err := m.Lookup(uint32(id-1), &frames); err != nil {
		return nil, fmt.Errorf("reading stack %d: %w", id-1, err)
	}
	for i, ip := range frames {
		if ip == 0 {
			return frames[:i], nil
		}
	}
	return frames, nil
}

// PruneStacks deletes the stacks no record refers to, so that the stack map, which keeps
// one stack per hash bucket, has room for new ones; without it, the distinct stacks of a
// long run would fill it and later stacks would be lost. It returns the ids deleted (as
// records hold them, id + 1): the kernel side may store another stack under such an id
// from now on, so what was cached for it is wrong for stacks captured after this call.
func (t *Tracker) PruneStacks() ([]uint16, error) {
	m := t.coll.Maps[threadcapMapStacks]
	used := make([]bool, m.MaxEntries()+1)
	n := t.Slots()
	t.records.mu.RLock()
	defer t.records.mu.RUnlock()
	for slot := range n {
		r := &t.records.recs[slot]
		if atomic.LoadUint32(&r.Tid) == 0 {
			continue // free: its old ids are nobody's
		}
		// A torn read costs nothing here: at worst a stack is kept one round longer, or
		// one a record is being given right now is deleted, which callers allow for. The
		// view at the tick holds ids too, which the current tick's rows may still show.
		for _, id := range [...]uint16{r.Live.Kstack, r.Live.Ustack, r.AtTick.Kstack, r.AtTick.Ustack} {
			if int(id) < len(used) {
				used[id] = true
			}
		}
	}
	var keys []uint32
	var key uint32
	err := m.NextKey(nil, &key)
	for err == nil {
		if id := key + 1; id < uint32(len(used)) && !used[id] {
			keys = append(keys, key)
		}
		err = m.NextKey(key, &key)
	}
	if !errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil, fmt.Errorf("listing stacks: %w", err)
	}
	deleted := make([]uint16, 0, len(keys))
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return deleted, fmt.Errorf("deleting stack %d: %w", k, err)
		}
		deleted = append(deleted, uint16(k+1))
	}
	return deleted, nil
}
