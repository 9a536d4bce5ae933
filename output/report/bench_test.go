// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
	"github.com/threadcap/threadcap/output/schema"
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
func writeHour(b testing.TB, n int, compress string) (string, int) {
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
			data = schema.AppendCSV(data, &s)
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

// BenchmarkConvertHour writes an hour of a busy server, 10 million rows, as Parquet, the way
// a closing hour or `threadcap convert` does. Run it with -cpu 1: the goal is 1 million
// rows/s on one core in at most 64 MiB. It reports the peak of the memory the Go runtime
// holds from the system while converting, and the bytes of the hour as CSV and Parquet.
func BenchmarkConvertHour(b *testing.B) {
	rows := 10_000_000
	if testing.Short() {
		rows = 1_000_000
	}
	dir, n := writeHour(b, rows, output.CompressNone)
	src := hourfile.File{Name: hourfile.Name{Kind: hourfile.Samples, Hour: start, Suffix: hourfile.CSV},
		Path: filepath.Join(dir, hourfile.Samples.Name(start, hourfile.CSV))}
	csvInfo, err := os.Stat(src.Path)
	if err != nil {
		b.Fatal(err)
	}
	gzipped := gzipSize(b, src.Path)
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		for {
			metrics.Read(m)
			if held := m[0].Value.Uint64() - m[1].Value.Uint64(); held > peak.Load() {
				peak.Store(held)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var size int64
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		out := b.TempDir()
		dst, st, err := parquet.ConvertHour(context.Background(), out, src, "db-7", parquet.FileOptions{GID: -1})
		if err != nil || st.Rows != int64(n) {
			b.Fatalf("converted %d rows of %d: %v", st.Rows, n, err)
		}
		fi, err := os.Stat(dst)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	close(stop)
	<-sampled
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	// On a machine others load, rows per second of this process's CPU time is what it costs.
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
	b.ReportMetric(float64(csvInfo.Size())/(1<<20), "csv-MiB")
	b.ReportMetric(float64(gzipped)/(1<<20), "gzip-MiB")
	b.ReportMetric(float64(size)/(1<<20), "parquet-MiB")
}

// gzipSize is the size of path compressed as the writer compresses closed hours by default.
func gzipSize(b *testing.B, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var n countingWriter
	zw := gzip.NewWriter(&n)
	if _, err := io.Copy(zw, f); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return int64(n)
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLiveRefresh is what top's live mode does each second over a daemon recording
// 1,000 active threads at 10 Hz: three minutes of rows are in the current hour's file,
// and each refresh asks for the last minute by process and state and the chart over the
// last three, after one more second of rows was written. "run" asks Run twice, as top did;
// "follow" asks a Follower, which reads only the new second. cpu-share is a refresh's CPU
// time over the second it refreshes: the share of a CPU live mode takes.
func BenchmarkLiveRefresh(b *testing.B) {
	const hz, threads = 10, 1000
	first := start.Add(10 * time.Minute)
	for _, how := range []string{"run", "follow"} {
		b.Run(how, func(b *testing.B) {
			dir := b.TempDir()
			var clock atomic.Int64
			log := logrus.New()
			log.SetOutput(io.Discard)
			w, err := output.New(output.Config{Dir: dir, Log: logrus.NewEntry(log), Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rows := busyTick(first, threads)
			tick := 0
			second := func() time.Time { // writes the next second of rows
				for range hz {
					at := first.Add(time.Duration(tick) * time.Second / hz)
					clock.Store(at.UnixNano())
					for j := range rows {
						rows[j].Time = at
					}
					if err := w.Write(at, rows); err != nil {
						b.Fatal(err)
					}
					tick++
				}
				return first.Add(time.Duration(tick) * time.Second / hz)
			}
			var now time.Time
			for range 180 {
				now = second()
			}
			by := []string{"process", "state"}
			f, err := NewFollower(dir, by, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			refresh := func() {
				window := Window{From: now.Add(-time.Minute), To: now}
				context := Window{From: now.Add(-3 * time.Minute), To: now}
				var r *Result
				if how == "run" {
					if r, err = Run(dir, Query{Window: window, By: by}); err == nil {
						_, err = Run(dir, Query{Window: context, Step: 2 * time.Second, By: by})
					}
				} else {
					r, _, err = f.Answer(window, context, 2*time.Second)
				}
				if err != nil {
					b.Fatal(err)
				}
				if r.Rows == 0 {
					b.Fatal("no rows")
				}
			}
			refresh() // the follower's first answer reads the three minutes
			var cpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				now = second()
				b.StartTimer()
				c := cpuTime(b)
				refresh()
				cpu += cpuTime(b) - c
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-share")
		})
	}
}
