// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// machinePIDNamespace is the link /proc/PID/ns/pid of a process in the machine's first PID
// namespace: its inode is PROC_PID_INIT_INO (include/linux/proc_ns.h), the same on every
// Linux since 3.8.
const machinePIDNamespace = "pid:[4026531836]"

// pidNamespaceFix is what to do when threadcap runs in a PID namespace of its own.
const pidNamespaceFix = "run threadcap in the machine's PID namespace: in a container, share the host's " +
	"(docker run --pid=host, Kubernetes hostPID: true); the systemd unit runs it there"

// ownPIDNamespace says why threadcap's rows cannot name the right processes when it runs in
// a PID namespace of its own (proc is /proc), "" when it runs in the machine's.
func ownPIDNamespace(proc string) (string, error) {
	ns, err := os.Readlink(filepath.Join(proc, "self/ns/pid"))
	if err != nil {
		return "", fmt.Errorf("which PID namespace threadcap runs in: %w", err)
	}
	if ns == machinePIDNamespace {
		return "", nil
	}
	return fmt.Sprintf("threadcap runs in a PID namespace of its own (%s), not the machine's (%s): "+
		"the kernel side records threads by the machine's ids, which this namespace's /proc does not show, "+
		"so rows would name other processes or none", ns, machinePIDNamespace), nil
}

// checkPIDNamespace fails when threadcap runs in a PID namespace of its own.
func checkPIDNamespace(proc string) checkResult {
	r := checkResult{name: "pid namespace", detail: "the machine's (" + machinePIDNamespace + ")"}
	why, err := ownPIDNamespace(proc)
	switch {
	case err != nil:
		r.detail, r.fix = err.Error(), "mount /proc"
	case why != "":
		r.detail, r.fix = why, pidNamespaceFix
	}
	return r
}
