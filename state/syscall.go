// SPDX-License-Identifier: Apache-2.0

package state

//go:generate go run gen_syscalls.go

import "strconv"

// SyscallName is the name of syscall nr on this machine's architecture: "" for
// NoSyscall, and "syscall_N" for a number the table does not know.
func SyscallName(nr int32) string {
	if nr < 0 {
		return ""
	}
	if int(nr) < len(syscallNames) && syscallNames[nr] != "" {
		return syscallNames[nr]
	}
	return "syscall_" + strconv.Itoa(int(nr))
}
