// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/state"
)

// busyTick is one tick of a busy database server as the daemon records it by default:
// rowsPerTick active threads of a few processes, in a mix of states and syscalls.
func busyTick(tick time.Time, rowsPerTick int) []state.Sample {
	type kind struct {
		process, thread, exe, syscall string
		st                            state.State
		onCPU                         int64
	}
	kinds := []kind{
		{"mysqld", "connection", "/usr/sbin/mysqld", "", state.OnCPU, 9_000},
		{"mysqld", "connection", "/usr/sbin/mysqld", "pread64", state.Uninterruptible, 300},
		{"mysqld", "ib_io_wr-1", "/usr/sbin/mysqld", "io_getevents", state.Uninterruptible, 120},
		{"mysqld", "connection", "/usr/sbin/mysqld", "futex", state.Runnable, 2_500},
		{"java", "GC Thread#0", "/usr/lib/jvm/java-21/bin/java", "", state.OnCPU, 10_000},
		{"java", "http-nio-8080-exec-12", "/usr/lib/jvm/java-21/bin/java", "epoll_wait", state.Runnable, 700},
		{"kworker/u16:3", "kworker/u16:3", "", "", state.Runnable, 40},
		{"postgres", "postgres: checkpointer", "/usr/lib/postgresql/17/bin/postgres", "fsync", state.Uninterruptible, 15},
	}
	rows := make([]state.Sample, rowsPerTick)
	for i := range rows {
		k := kinds[i%len(kinds)]
		s := state.Sample{
			Time: tick, Pid: int32(1000 + i%len(kinds)), Tid: int32(20000 + i), Process: k.process, Thread: k.thread,
			User: "mysql", State: k.st, StateUs: 4_200, Syscall: k.syscall, SyscallUs: state.Unknown,
			SyscallCPUUs: state.Unknown, CPU: int32(i % 16), Voluntary: 3, Involuntary: 1, Exe: k.exe,
		}
		if k.syscall != "" {
			s.SyscallUs, s.SyscallCPUUs, s.Args = 4_200, 12, [6]uint64{0x1b, 0x7f3a5c000000, 0x4000, 0x1f4000, 0, 0}
		}
		s.StateTimeUs = [state.TimedStates]int64{k.onCPU, 150, 0, 10_000 - k.onCPU - 150, 0}
		rows[i] = s
	}
	return rows
}

// writeHour writes an hour file of about n rows at 100 Hz with output.Writer, compressed
// as compress says, and returns the directory and the number of rows.
func writeHour(b *testing.B, n int, compress string) (string, int) {
	b.Helper()
	dir := b.TempDir()
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Compress: compress, Log: logrus.NewEntry(log),
		Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	const hz = 100
	ticks := hz * 3600
	perTick := max(1, n/ticks)
	ticks = min(ticks, n/perTick)
	rows := busyTick(start, perTick)
	for i := range ticks {
		tick := start.Add(time.Duration(i) * time.Second / hz)
		for j := range rows {
			rows[j].Time = tick
		}
		if err := w.Write(tick, rows); err != nil {
			b.Fatal(err)
		}
	}
	if compress != output.CompressNone {
		// The next hour closes this one; the writer compresses it in the background.
		next := start.Add(time.Hour)
		clock.Store(next.UnixNano())
		if err := w.Write(next, nil); err != nil {
			b.Fatal(err)
		}
		suffix := map[string]string{output.CompressGzip: hourfile.Gzip, output.CompressZstd: hourfile.Zstd}[compress]
		name := filepath.Join(dir, hourfile.Samples.Name(start, suffix))
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if _, err := os.Stat(name); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s never appeared", name)
			}
		}
	}
	return dir, ticks * perTick
}

// BenchmarkReportHour reads one hour of a busy server, grouped by process, state and
// syscall, the way `threadcap report` does. Run it with -cpu 1: the target is an hour of 10
// million rows in 10 s on one core.
func BenchmarkReportHour(b *testing.B) {
	for _, tc := range []struct {
		compress string
		rows     int
	}{
		{output.CompressNone, 10_000_000},
		{output.CompressGzip, 1_000_000},
		{output.CompressZstd, 1_000_000},
	} {
		b.Run(fmt.Sprintf("%s-%dM", tc.compress, tc.rows/1_000_000), func(b *testing.B) {
			dir, n := writeHour(b, tc.rows, tc.compress)
			q := Query{Window: Window{From: start, To: start.Add(time.Hour)}, By: []string{"process", "state", "syscall"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, err := Run(dir, q)
				if err != nil {
					b.Fatal(err)
				}
				if r.Rows != int64(n) {
					b.Fatalf("read %d rows, want %d", r.Rows, n)
				}
			}
			// B/op, all a report allocates, shows that memory does not grow with rows.
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkRecords compares the record reader with encoding/csv on the rows of a busy
// hour, which is why the report does not use encoding/csv.
func BenchmarkRecords(b *testing.B) {
	var data []byte
	for i := range 2000 {
		for _, s := range busyTick(start.Add(time.Duration(i)*10*time.Millisecond), 28) {
			data = output.AppendCSV(data, &s)
		}
	}
	rows := 2000 * 28
	b.Run("recordReader", func(b *testing.B) {
		for b.Loop() {
			rr := hourfile.NewRecordReader(bytes.NewReader(data))
			for {
				if _, err := rr.Read(); err != nil {
					break
				}
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("encoding-csv", func(b *testing.B) {
		for b.Loop() {
			cr := csv.NewReader(bytes.NewReader(data))
			cr.ReuseRecord = true
			for {
				if _, err := cr.Read(); err != nil {
					break
				}
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
