// SPDX-License-Identifier: Apache-2.0

package procinfo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sock_diag's structures (linux/inet_diag.h, linux/sock_diag.h), which x/sys/unix has
// the constants but not the types of.
const (
	sizeofNlMsghdr      = 16
	sizeofInetDiagReq   = 56 // inet_diag_req_v2
	sizeofInetDiagMsg   = 72 // inet_diag_msg
	inetDiagInfo        = 2  // INET_DIAG_INFO: the tcp_info attribute
	sizeofRtAttr        = 4
	tcpStatesNoTimeWait = ^uint32(0) &^ (1<<6 | 1<<12) // TIME_WAIT and NEW_SYN_RECV have no inode
)

// nativeEndian is netlink's byte order: the host's.
var nativeEndian = binary.NativeEndian

// diagConn is a sock_diag socket in one network namespace, or why it could not be opened.
type diagConn struct {
	fd      int // -1 when closed or never opened
	openErr error
	seq     uint32
	buf     []byte // for answers
}

// openDiag is the diagConn of what diagSocket or diagSocketIn returned.
func openDiag(fd int, err error) diagConn {
	if err != nil {
		return diagConn{fd: -1, openErr: err}
	}
	return diagConn{fd: fd}
}

func (c *diagConn) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

var errTruncated = errors.New("sock_diag answer cut short")

// dumpSockets asks for every socket of family and protocol whose state is in the mask states,
// with the attributes ext (a mask of INET_DIAG_* - 1), and calls fn with each one's
// inet_diag_msg and attributes; fn must not keep the slice.
func (c *diagConn) dumpSockets(family, protocol, ext uint8, states uint32, fn func(msg []byte)) error {
	c.seq++
	var req [sizeofNlMsghdr + sizeofInetDiagReq]byte
	ne := nativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], c.seq)
	r := req[sizeofNlMsghdr:]
	r[0], r[1], r[2] = family, protocol, ext
	ne.PutUint32(r[4:], states)
	if err := unix.Sendto(c.fd, req[:], 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("asking sock_diag: %w", err)
	}
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	for {
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			return fmt.Errorf("reading sock_diag: %w", err)
		}
		for b := c.buf[:n]; len(b) >= sizeofNlMsghdr; {
			l := int(ne.Uint32(b[0:]))
			if l < sizeofNlMsghdr || l > len(b) {
				return errTruncated
			}
			typ, seq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
			msg := b[sizeofNlMsghdr:l]
			b = b[min(nlmAlign(l), len(b)):]
			if seq != c.seq {
				continue // the rest of an earlier, failed dump
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(msg) >= 4 {
					if e := int32(ne.Uint32(msg)); e != 0 {
						return fmt.Errorf("sock_diag: %w", syscall.Errno(-e))
					}
				}
				return nil
			case unix.SOCK_DIAG_BY_FAMILY:
				fn(msg)
			}
		}
	}
}

func nlmAlign(l int) int { return (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// diagSocket opens a sock_diag netlink socket in the calling thread's network namespace.
// A dump that does not answer within a second is an error, not a stuck sampler.
func diagSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("opening a sock_diag socket: %w", err)
	}
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// diagSocketIn opens a sock_diag socket in the network namespace at nsPath: a socket
// stays in the namespace it was made in. The thread that makes it enters the namespace and
// comes back to its own before Go may run anything else on it; a thread that cannot come
// back stays locked, and Go ends it with its goroutine (the main thread it wedges instead,
// which is why the thread must come back rather than just end).
func diagSocketIn(nsPath string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		defer unix.Close(own)
		nsFd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		defer unix.Close(nsFd)
		if err := unix.Setns(nsFd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, fmt.Errorf("entering network namespace %s: %w", nsPath, err)}
			return
		}
		fd, err := diagSocket()
		if unix.Setns(own, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{fd, err}
	}()
	r := <-done
	return r.fd, r.err
}
