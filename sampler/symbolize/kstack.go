// SPDX-License-Identifier: Apache-2.0

// Package symbolize names the frames of the stacks the kernel side captured: kernel
// addresses from kallsyms, user-space ones from the ELF symbols (or Go function table)
// of the file mapped at them, each read once and cached by stack id.
package symbolize

import (
	"sync"
	"unsafe"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/state"
)

// StackReader reads the stacks the kernel side captured; *bpf.Tracker implements it.
type StackReader interface {
	// Stack returns the frames of stack id (as records hold it: id + 1), innermost first.
	Stack(id uint16) ([]uint64, error)
}

// KernelStack is a symbolized kernel stack and the function it waits in.
type KernelStack struct {
	Stack *state.Stack
	Wchan string
}

// KernelStacks symbolizes kernel stacks once per stack id. An id means the same stack until
// the sampler prunes it (see Pruned), which forgets it here too (Forget); the cache holds
// at most as many entries as the stack map.
type KernelStacks struct {
	src  StackReader
	byID map[uint16]KernelStack
	// byIPs caches the stacks FromIPs names, by their frames' bytes; emptied when it
	// reaches maxByIPs.
	byIPs    map[string]KernelStack
	log      *logrus.Entry
	kallsyms string
	start    sync.Once
	// loaded is closed once the symbols are read (syms) or could not be (loadErr).
	loaded  chan struct{}
	syms    *kernelSymbols
	loadErr error
	ready   bool // loaded was seen closed; loadErr, if any, logged
}

// NewKernelStacks symbolizes the stacks src reads with the symbols of the kallsyms file.
func NewKernelStacks(src StackReader, kallsyms string, log *logrus.Entry) *KernelStacks {
	return &KernelStacks{src: src, byID: map[uint16]KernelStack{}, byIPs: map[string]KernelStack{},
		log: log, kallsyms: kallsyms, loaded: make(chan struct{})}
}

// Load starts reading the kernel's symbols in the background, once: some 150 ms of CPU
// and a few MB that would otherwise stall whichever tick first shows a stack (and, at a
// high rate, skip the ticks after it). The sampler starts it after its first tick, not
// with seeding, whose peak of memory it would add to.
func (k *KernelStacks) Load() {
	k.start.Do(func() {
		go func() {
			defer close(k.loaded)
			k.syms, k.loadErr = readKallsyms(k.kallsyms)
		}()
	})
}

// Get returns stack id symbolized; a nil stack when it cannot be read.
func (k *KernelStacks) Get(id uint16) KernelStack {
	if ks, ok := k.byID[id]; ok {
		return ks
	}
	if !k.symbolsRead() {
		return KernelStack{}
	}
	ips, err := k.src.Stack(id)
	if err != nil {
		k.log.WithError(err).Debug("reading a stack failed")
		return KernelStack{}
	}
	ks := k.name(ips)
	k.byID[id] = ks
	return ks
}

// maxByIPs bounds FromIPs's cache: some 100 bytes a frame, 48 frames a stack at most.
const maxByIPs = 4096

// FromIPs symbolizes a kernel stack given by its frames, innermost first, as the kernel
// side walked them for a thread off CPU (a task's stack: the scheduler's frames first).
func (k *KernelStacks) FromIPs(ips []uint64) KernelStack {
	key := string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ips))), len(ips)*8))
	if ks, ok := k.byIPs[key]; ok {
		return ks
	}
	if !k.symbolsRead() {
		return KernelStack{}
	}
	if len(k.byIPs) >= maxByIPs {
		clear(k.byIPs)
	}
	ks := k.name(ips)
	k.byIPs[key] = ks
	return ks
}

// symbolsRead waits for the kernel's symbols, the first time, and reports whether they
// could be read.
func (k *KernelStacks) symbolsRead() bool {
	if !k.ready {
		k.Load()
		<-k.loaded // at most the rest of the read started after the first tick
		k.ready = true
		if k.loadErr != nil {
			k.log.WithError(k.loadErr).Warn("kernel stacks cannot be symbolized; the kernel_stack column stays empty")
		}
	}
	return k.loadErr == nil
}

// name symbolizes ips, innermost first.
func (k *KernelStacks) name(ips []uint64) KernelStack {
	// A stack taken by a timer on CPU shows the code interrupted, and waits in nothing;
	// one taken at a switch-out, what the thread waits in.
	ips, running := k.syms.interruptedFrames(ips)
	if !running {
		ips = k.syms.waitFrames(ips)
	}
	if len(ips) == 0 {
		return KernelStack{}
	}
	frames := make([]string, len(ips))
	for i, ip := range ips {
		frames[len(ips)-1-i] = k.syms.name(ip)
	}
	ks := KernelStack{Stack: state.NewStack(frames)}
	if !running {
		ks.Wchan = frames[len(frames)-1]
	}
	return ks
}

// Forget drops what was cached for stack id, which the kernel side may reuse.
func (k *KernelStacks) Forget(id uint16) { delete(k.byID, id) }
