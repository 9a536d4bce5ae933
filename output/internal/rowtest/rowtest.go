// SPDX-License-Identifier: Apache-2.0

// Package rowtest is what the output packages' tests share: a typical row, and the time
// zone their golden files are written in.
package rowtest

import (
	"os"
	"testing"
	"time"
	_ "time/tzdata" // the DST tests must not depend on the host's zoneinfo

	"github.com/threadcap/threadcap/state"
)

// Tick is a tick the tests write rows at.
var Tick = time.Date(2026, 11, 21, 13, 3, 7, 123456789, time.UTC)

// NewYork is the local time zone of the tests Main runs: it has both DST transitions,
// and fixing it makes golden files independent of the machine.
var NewYork = func() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	return loc
}()

// Main runs m's tests with NewYork as the local time zone.
func Main(m *testing.M) {
	// Set before any test starts, so no goroutine reads it while it changes.
	time.Local = NewYork
	os.Exit(m.Run())
}

// MysqlRow is a typical row: a database thread sleeping in a syscall.
func MysqlRow(tick time.Time, tid int32) state.Sample {
	return state.Sample{
		Time: tick, Pid: 4242, Tid: tid, Process: "mysqld", Thread: "connection", User: "mysql",
		State: state.Sleeping, StateUs: 1500, Syscall: "futex", SyscallUs: 1500, SyscallCPUUs: 3,
		Args: [6]uint64{0x7f1234560000, 0x80, 0, 0, 0, 0xffffffff}, CPU: 1,
		StateTimeUs: [state.TimedStates]int64{120, 5, 99875, 0, 0},
		Voluntary:   3, Involuntary: 1, Exe: "/usr/sbin/mysqld", Cgroup: "/system.slice/mysql.service",
	}
}

// MysqlRows are n rows of MysqlRow, of threads firstTid onwards.
func MysqlRows(tick time.Time, firstTid int32, n int) []state.Sample {
	rows := make([]state.Sample, n)
	for i := range rows {
		rows[i] = MysqlRow(tick, firstTid+int32(i))
	}
	return rows
}
