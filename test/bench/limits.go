// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
)

// Sysctls that bound how many threads the machine can run.
const (
	pidMaxPath     = "/proc/sys/kernel/pid_max"
	threadsMaxPath = "/proc/sys/kernel/threads-max"
	// pidMaxLimit is the highest pid_max a 64-bit kernel takes (PID_MAX_LIMIT).
	pidMaxLimit = 4 << 20
)

// makeRoomForThreads raises pid_max when the scale workload's threads would not fit
// under it (many distributions keep 32768), since a thread Linux refuses to create kills
// a Go program. restore puts the old value back.
func makeRoomForThreads(threads int, log *logrus.Entry) (restore func(), err error) {
	restore = func() {}
	// Room for the machine's own threads and those of the harness and the daemon.
	need := threads + machineThreads() + 5000
	if limit, err := readSysctl(threadsMaxPath); err == nil && limit < need {
		return restore, fmt.Errorf("kernel.threads-max is %d, the scale workload needs %d: "+
			"raise it (sysctl kernel.threads-max=%d) or lower --scale", limit, need, need)
	}
	old, err := readSysctl(pidMaxPath)
	if err != nil || old >= need {
		return restore, err
	}
	if need > pidMaxLimit {
		return restore, fmt.Errorf("%d threads do not fit under the kernel's pid limit: lower --scale", threads)
	}
	if err := os.WriteFile(pidMaxPath, []byte(strconv.Itoa(pidMaxLimit)), 0); err != nil {
		return restore, fmt.Errorf("raising kernel.pid_max for %d threads (or lower --scale): %w", threads, err)
	}
	log.WithFields(logrus.Fields{"old": old, "new": pidMaxLimit}).Info("raised kernel.pid_max for the scale workload; restored at the end")
	return func() {
		if err := os.WriteFile(pidMaxPath, []byte(strconv.Itoa(old)), 0); err != nil {
			log.WithError(err).Warn("could not restore kernel.pid_max")
		}
	}, nil
}

func readSysctl(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
