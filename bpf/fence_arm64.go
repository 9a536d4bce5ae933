// SPDX-License-Identifier: Apache-2.0

package bpf

import "sync/atomic"

var fenceWord uint32

// loadFence orders the loads of a record copy before the load of seq that validates it.
// arm64 may reorder plain loads after the acquire load of seq; an atomic read-modify-write
// (LDADDAL, acquire and release) is a full barrier and keeps them in order.
func loadFence() { atomic.AddUint32(&fenceWord, 0) }
