// SPDX-License-Identifier: Apache-2.0

// Package floor attaches empty BPF programs to the hooks threadcap uses: the cost any
// design built on these hooks pays, the baseline threadcap's own cost is measured against.
package floor

//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" floor floor.bpf.c

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Hooks are the floor's programs, loaded and attached until Close.
type Hooks struct {
	coll  *ebpf.Collection
	links []link.Link
}

// Attach loads the empty programs and attaches them: every one, or with syscalls false
// all but the raw_syscalls pair, the hooks of threadcap's passive mode. On error nothing
// stays attached.
func Attach(syscalls bool) (*Hooks, error) {
	spec, err := loadFloor()
	if err != nil {
		return nil, err
	}
	if !syscalls {
		for name, p := range spec.Programs {
			if p.AttachTo == "sys_enter" || p.AttachTo == "sys_exit" {
				delete(spec.Programs, name)
			}
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("loading the floor programs (needs root): %w", err)
	}
	h := &Hooks{coll: coll}
	for name, prog := range coll.Programs {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("attaching floor program %s: %w", name, err)
		}
		h.links = append(h.links, l)
	}
	return h, nil
}

// Close detaches and unloads everything; it is nil-safe and returns every error.
func (h *Hooks) Close() error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, l := range h.links {
		errs = append(errs, l.Close())
	}
	h.coll.Close()
	return errors.Join(errs...)
}
