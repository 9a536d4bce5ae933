// SPDX-License-Identifier: Apache-2.0

package blockdev

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iocb and ioEvent are the kernel's struct iocb and struct io_event (linux/aio_abi.h),
// little-endian layout.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fd        uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const iocbCmdPread = 0

// AIO is a Linux native AIO context (what libaio wraps): reads submitted by one thread,
// completed later, whoever waits for them.
type AIO struct {
	ctx  uintptr
	cbs  []iocb
	bufs [][]byte
}

// NewAIO makes a context for up to n reads in flight.
func NewAIO(n int) (*AIO, error) {
	a := &AIO{}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(n), uintptr(unsafe.Pointer(&a.ctx)), 0); e != 0 {
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	return a, nil
}

// SubmitReads submits n reads of size bytes of r's file, at 0, size, 2×size…, from the
// calling thread, and returns without waiting for them.
func (a *AIO) SubmitReads(r *DirectReader, n, size int) error {
	a.cbs = make([]iocb, n)
	a.bufs = make([][]byte, n)
	ptrs := make([]*iocb, n)
	for i := range a.cbs {
		a.bufs[i] = aligned(size)
		a.cbs[i] = iocb{
			opcode: iocbCmdPread, fd: uint32(r.f.Fd()),
			buf: uint64(uintptr(unsafe.Pointer(&a.bufs[i][0]))), nbytes: uint64(size),
			offset: int64(i * size),
		}
		ptrs[i] = &a.cbs[i]
	}
	got, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, uintptr(n), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(ptrs)
	if e != 0 {
		return fmt.Errorf("io_submit: %w", e)
	}
	if int(got) != n {
		return fmt.Errorf("io_submit took %d reads of %d", got, n)
	}
	return nil
}

// Wait waits for every read submitted and checks each read its size.
func (a *AIO) Wait() error {
	events := make([]ioEvent, len(a.cbs))
	for done := 0; done < len(a.cbs); {
		got, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, 1, uintptr(len(a.cbs)-done),
			uintptr(unsafe.Pointer(&events[done])), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_getevents: %w", e)
		}
		done += int(got)
	}
	runtime.KeepAlive(a.cbs)
	runtime.KeepAlive(a.bufs)
	for _, ev := range events {
		if ev.res != int64(a.cbs[0].nbytes) {
			return fmt.Errorf("an asynchronous read returned %d", ev.res)
		}
	}
	return nil
}

// Close destroys the context.
func (a *AIO) Close() error {
	if _, _, e := unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0); e != 0 {
		return fmt.Errorf("io_destroy: %w", e)
	}
	return nil
}
