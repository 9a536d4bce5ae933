// SPDX-License-Identifier: Apache-2.0

// Command gospin spins in spinHere for the seconds given, for Go names in user stacks.
package main

import (
	"os"
	"strconv"
	"time"
)

var sink int

//go:noinline
func spinHere(until time.Time) {
	for time.Now().Before(until) {
		for i := 0; i < 1000; i++ {
			sink += i
		}
	}
}

func main() {
	seconds, _ := strconv.Atoi(os.Args[1])
	spinHere(time.Now().Add(time.Duration(seconds) * time.Second))
}
