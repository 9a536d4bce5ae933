// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// maxAsks is how many asks one run of an ask program answers; run runs it as many times as
// its asks need.
const maxAsks = 1024

// askIterator owns a program made with askiter.h's ASK_ITERATOR, which answers asks of
// type T (the C struct bpf2go made T from) in the sampler's thread, a batch a run: the
// asks go in and the answers come back through the array of asks mapped in memory, and
// reading the file of the program's iterator link to its end runs it once.
type askIterator[T any] struct {
	what string // what the program is, for errors: "the TCP socket reader"
	coll *ebpf.Collection
	link *link.Iter
	mem  []byte // the mapping of the asks array
	asks []T    // mem, as asks
}

// openAskIterator loads spec, a program of what, and makes its link. On error nothing stays
// loaded.
func openAskIterator[T any](spec *ebpf.CollectionSpec, what string) (a *askIterator[T], err error) {
	spec.Maps["asks"].MaxEntries = maxAsks
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, explain(fmt.Errorf("loading %s: %w", what, err))
	}
	a = &askIterator[T]{what: what, coll: coll}
	defer func() {
		if err != nil {
			a.close()
			a = nil
		}
	}()
	asks := coll.Maps["asks"]
	size := int(unsafe.Sizeof(*new(T)))
	if int(asks.ValueSize()) != size {
		return nil, fmt.Errorf("%s: an ask is %d bytes in the kernel object but %d in Go", what, asks.ValueSize(), size)
	}
	a.mem, err = syscall.Mmap(asks.FD(), 0, maxAsks*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the asks of %s: %w", what, err)
	}
	a.asks = unsafe.Slice((*T)(unsafe.Pointer(&a.mem[0])), maxAsks)
	a.link, err = link.AttachIter(link.IterOptions{Program: coll.Programs["answer_asks"], Map: coll.Maps["one_batch"]})
	if err != nil {
		return nil, explain(fmt.Errorf("making the iterator of %s: %w", what, err))
	}
	return a, nil
}

// run answers asks in place, in one run of the program per maxAsks.
func (a *askIterator[T]) run(asks []T) error {
	for len(asks) > 0 {
		n := min(len(asks), maxAsks)
		copy(a.asks, asks[:n])
		if err := a.coll.Variables["nr_asks"].Set(uint32(n)); err != nil {
			return fmt.Errorf("setting the asks of %s: %w", a.what, err)
		}
		rd, err := a.link.Open()
		if err != nil {
			return fmt.Errorf("starting %s: %w", a.what, err)
		}
		_, err = io.Copy(io.Discard, rd)
		if err = errors.Join(err, rd.Close()); err != nil {
			return fmt.Errorf("running %s: %w", a.what, err)
		}
		copy(asks[:n], a.asks)
		asks = asks[n:]
	}
	return nil
}

// close frees the program, its link and maps. It may be called on a nil or partly opened
// askIterator.
func (a *askIterator[T]) close() error {
	if a == nil {
		return nil
	}
	var err error
	if a.link != nil {
		err = a.link.Close()
		a.link = nil
	}
	if a.mem != nil {
		err = errors.Join(err, syscall.Munmap(a.mem))
		a.mem, a.asks = nil, nil
	}
	if a.coll != nil {
		a.coll.Close()
		a.coll = nil
	}
	return err
}
