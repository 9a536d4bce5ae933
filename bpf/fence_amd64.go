// SPDX-License-Identifier: Apache-2.0

package bpf

// loadFence orders the loads of a record copy before the load of seq that validates it.
// amd64 never reorders loads with other loads, so nothing is needed.
func loadFence() {}
