// SPDX-License-Identifier: Apache-2.0

package sampler

import (
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
	kallsyms string
	syms     *kernelSymbols
	byID     map[uint16]kernelStack
	log      *logrus.Entry
	broken   bool // kallsyms could not be read: logged once, no stacks
}

func newKernelStacks(src StackSource, kallsyms string, log *logrus.Entry) *kernelStacks {
	return &kernelStacks{src: src, kallsyms: kallsyms, byID: map[uint16]kernelStack{}, log: log}
}

// get returns stack id symbolized; a nil stack when it cannot be read.
func (k *kernelStacks) get(id uint16) kernelStack {
	if ks, ok := k.byID[id]; ok {
		return ks
	}
	if k.broken {
		return kernelStack{}
	}
	if k.syms == nil {
		// Read at the first stack, after the kernel side is loaded, so that its own
		// programs are named too.
		syms, err := readKallsyms(k.kallsyms)
		if err != nil {
			k.broken = true
			k.log.WithError(err).Warn("kernel stacks cannot be symbolized; the kernel_stack column stays empty")
			return kernelStack{}
		}
		k.syms = syms
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
