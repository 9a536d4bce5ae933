// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the DST tests must not depend on the host's zoneinfo

	"github.com/klauspost/compress/zstd"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// newYork is the process's local time zone in these tests: it has both DST transitions,
// and fixing it makes golden files independent of the machine.
var newYork *time.Location

func TestMain(m *testing.M) {
	var err error
	if newYork, err = time.LoadLocation("America/New_York"); err != nil {
		panic(err)
	}
	// Set before any test starts, so no goroutine reads it while it changes.
	time.Local = newYork
	os.Exit(m.Run())
}

// fakeClock is the injected clock; tests move it by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// testConfig is a Config for dir with the clock at now, logging into the returned hook.
func testConfig(dir string, now time.Time) (Config, *fakeClock, *logtest.Hook) {
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	clock := &fakeClock{now: now}
	return Config{Dir: dir, Compress: CompressNone, Clock: clock.Now, Log: logger.WithField(fieldComponent, "output")}, clock, hook
}

// mysqlRow is a typical row: a database thread sleeping in a syscall.
func mysqlRow(tick time.Time, tid int32) state.Sample {
	return state.Sample{
		Time: tick, Pid: 4242, Tid: tid, Process: "mysqld", Thread: "connection", User: "mysql",
		State: state.Sleeping, StateUs: 1500, Syscall: "futex", SyscallUs: 1500, SyscallCPUUs: 3,
		Args: [6]uint64{0x7f1234560000, 0x80, 0, 0, 0, 0xffffffff}, CPU: 1,
		StateTimeUs: [state.TimedStates]int64{120, 5, 99875, 0, 0},
		Voluntary:   3, Involuntary: 1, Exe: "/usr/sbin/mysqld", Cgroup: "/system.slice/mysql.service",
	}
}

func mysqlRows(tick time.Time, firstTid int32, n int) []state.Sample {
	rows := make([]state.Sample, n)
	for i := range rows {
		rows[i] = mysqlRow(tick, firstTid+int32(i))
	}
	return rows
}

// readCSV parses a file the way a user's tools would, decompressing by suffix, and returns
// its records with the header first. Every record must have as many fields as its kind's
// header.
func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(readPlain(t, path)))
	r.FieldsPerRecord = strings.Count(kindHeader(filepath.Base(path)), ",") + 1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s does not parse as CSV: %v", path, err)
	}
	return records
}

// kindHeader is the header of the hour file named name.
func kindHeader(name string) string {
	n, _ := hourfile.Parse(name)
	return headers[n.Kind]
}

// readPlain is the uncompressed content of an hour file.
func readPlain(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	switch filepath.Ext(path) {
	case ".gz":
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = gz
	case ".zst":
		zr, err := zstd.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// dirNames lists dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

// countLogs counts log entries at level whose message is msg.
func countLogs(hook *logtest.Hook, level logrus.Level, msg string) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Level == level && e.Message == msg {
			n++
		}
	}
	return n
}
