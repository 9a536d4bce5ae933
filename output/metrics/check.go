// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"fmt"
	"net"
	"strconv"
)

// MaxTopProcesses bounds the activity metrics: 5 series per process.
const MaxTopProcesses = 1000

// CheckListen accepts what Listen can listen on: host:port, the host an address or a name,
// the port a number. Whether the port is free is known only by listening.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("%q is not an address: write host:port, like 127.0.0.1:9465 or [::1]:9465", addr)
	}
	return nil
}

// CheckTopProcesses accepts how many processes may have a label of their own.
func CheckTopProcesses(n int) error {
	if n < 0 || n > MaxTopProcesses {
		return fmt.Errorf("%d is out of range: use 0 to %d processes", n, MaxTopProcesses)
	}
	return nil
}
