// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// StackSource reads the stacks the kernel side captured; *bpf.Tracker implements it.
type StackSource interface {
	// Stack returns the frames of stack id (as records hold it: id + 1), innermost first.
	Stack(id uint16) ([]uint64, error)
	// PruneStacks deletes the stacks no record holds and returns their ids, which the
	// kernel side may give other stacks from then on.
	PruneStacks() ([]uint16, error)
}

// kernelStack is a symbolized kernel stack and the function it waits in.
type kernelStack struct {
	stack *state.Stack
	wchan string
}

// kernelStacks symbolizes kernel stacks once per stack id. An id means the same stack until
// the sampler prunes it (see stackprune.go), which forgets it here too; the cache holds
// at most as many entries as the stack map.
type kernelStacks struct {
	src      StackSource
	byID     map[uint16]kernelStack
	log      *logrus.Entry
	kallsyms string
	start    sync.Once
	// loaded is closed once the symbols are read (syms) or could not be (loadErr).
	loaded  chan struct{}
	syms    *kernelSymbols
	loadErr error
	ready   bool // loaded was seen closed; loadErr, if any, logged
}

func newKernelStacks(src StackSource, kallsyms string, log *logrus.Entry) *kernelStacks {
	return &kernelStacks{src: src, byID: map[uint16]kernelStack{}, log: log, kallsyms: kallsyms, loaded: make(chan struct{})}
}

// load starts reading the kernel's symbols in the background, once: some 150 ms of CPU
// and a few MB that would otherwise stall whichever tick first shows a stack (and, at a
// high rate, skip the ticks after it). The sampler starts it after its first tick, not
// with seeding, whose peak of memory it would add to.
func (k *kernelStacks) load() {
	k.start.Do(func() {
		go func() {
			defer close(k.loaded)
			k.syms, k.loadErr = readKallsyms(k.kallsyms)
		}()
	})
}

// get returns stack id symbolized; a nil stack when it cannot be read.
func (k *kernelStacks) get(id uint16) kernelStack {
	if ks, ok := k.byID[id]; ok {
		return ks
	}
	if !k.ready {
		k.load()
		<-k.loaded // at most the rest of the read started after the first tick
		k.ready = true
		if k.loadErr != nil {
			k.log.WithError(k.loadErr).Warn("kernel stacks cannot be symbolized; the kernel_stack column stays empty")
		}
	}
	if k.loadErr != nil {
		return kernelStack{}
	}
	ips, err := k.src.Stack(id)
	if err != nil {
		k.log.WithError(err).Debug("reading a stack failed")
		return kernelStack{}
	}
	ips = k.syms.waitFrames(ips)
	if len(ips) == 0 {
		return kernelStack{}
	}
	frames := make([]string, len(ips))
	for i, ip := range ips {
		frames[len(ips)-1-i] = k.syms.name(ip)
	}
	ks := kernelStack{stack: state.NewStack(frames), wchan: frames[len(frames)-1]}
	k.byID[id] = ks
	return ks
}
