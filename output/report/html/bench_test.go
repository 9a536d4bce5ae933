// SPDX-License-Identifier: Apache-2.0

package html

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/report"
	"github.com/threadcap/threadcap/state"
)

// busyRows is one tick of a busy server: n active threads of a few processes, each in a
// state and syscall that changes from tick to tick, some with a kernel stack.
func busyRows(tick time.Time, i, n int) []state.Sample {
	type kind struct {
		process, syscall, wchan string
		st                      state.State
		onCPU                   int64
	}
	kinds := []kind{
		{"mysqld", "", "", state.OnCPU, 90_000},
		{"mysqld", "pread64", "blk_mq_get_tag", state.Uninterruptible, 300},
		{"mysqld", "futex", "", state.Runnable, 2_500},
		{"java", "", "", state.OnCPU, 100_000},
		{"java", "epoll_wait", "", state.Runnable, 700},
		{"postgres", "fsync", "jbd2_log_wait_commit", state.Uninterruptible, 15},
	}
	stacks := []*state.Stack{
		{Hash: "00000000000000a1", Frames: "entry_SYSCALL_64;do_syscall_64;__x64_sys_pread64;vfs_read;blk_mq_get_tag;io_schedule"},
		{Hash: "00000000000000a2", Frames: "entry_SYSCALL_64;do_syscall_64;__x64_sys_fsync;jbd2_log_wait_commit;schedule"},
	}
	rows := make([]state.Sample, n)
	for t := range rows {
		k := kinds[(t+i/50)%len(kinds)]
		s := state.Sample{Time: tick, Pid: int32(1000 + t%len(kinds)), Tid: int32(20000 + t), Process: k.process,
			Thread: k.process + "-worker-" + strconv.Itoa(t), User: "app", State: k.st, StateUs: 4_200, Syscall: k.syscall,
			SyscallUs: state.Unknown, SyscallCPUUs: state.Unknown, Wchan: k.wchan, Exe: "/usr/bin/" + k.process,
			Cmdline: "/usr/bin/" + k.process + " --config /etc/" + k.process + ".conf"}
		if k.syscall != "" {
			s.SyscallUs = int64(1 + (t*7919+i)%100_000)
		}
		if k.st == state.Uninterruptible {
			s.KernelStack = stacks[t%2]
		}
		s.StateTimeUs[state.OnCPU] = k.onCPU
		rows[t] = s
	}
	return rows
}

// BenchmarkPageHour writes an hour at 10 Hz of THREADCAP_PAGE_THREADS active threads a
// tick (default 1000: the 36 M rows, about 3.5 GB and minutes to write), then
// times `report`'s table and the page over it, and Chromium loading the page and redrawing
// it after a drag. Run it alone on an idle machine, with -benchtime 1x -cpu 1.
func BenchmarkPageHour(b *testing.B) {
	threads := 1000
	if v, err := strconv.Atoi(os.Getenv("THREADCAP_PAGE_THREADS")); err == nil {
		threads = v
	}
	dir := b.TempDir()
	var clock atomic.Int64
	clock.Store(first.UnixNano())
	l := logrus.New()
	l.SetOutput(io.Discard)
	w, err := output.New(output.Config{Dir: dir, Log: logrus.NewEntry(l), Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		b.Fatal(err)
	}
	const hz = 10
	for i := range 3600 * hz {
		tick := first.Add(time.Duration(i) * time.Second / hz)
		clock.Store(tick.UnixNano())
		if err := w.Write(tick, busyRows(tick, i, threads)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	q := report.Query{Window: report.Window{From: first, To: first.Add(time.Hour)}, By: []string{"state", "syscall"}, Top: 20}
	path := filepath.Join(b.TempDir(), "page.html")
	// One read before the timed ones, so that both find the hour in the page cache: the
	// first read after writing gigabytes waits for the disk, the second does not.
	if _, err := report.Run(dir, q); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var tableTime, pageTime, tableCPU, pageCPU time.Duration
	for range b.N {
		t0, c0 := time.Now(), cpuTime(b)
		if _, err := report.Run(dir, q); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime(b)
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(f, dir, q, Options{Host: "bench", CPUs: 16}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		tableTime, pageTime = tableTime+t1.Sub(t0), pageTime+time.Since(t1)
		tableCPU, pageCPU = tableCPU+c1-c0, pageCPU+cpuTime(b)-c1
	}
	b.StopTimer()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(3600*hz*threads), "rows")
	b.ReportMetric(tableTime.Seconds()/float64(b.N), "table-s")
	b.ReportMetric(pageTime.Seconds()/float64(b.N), "page-s")
	b.ReportMetric(tableTime.Seconds()/pageTime.Seconds(), "page-speed-of-table")
	// The same in CPU time, which other work on the machine changes less than wall time.
	b.ReportMetric(tableCPU.Seconds()/pageCPU.Seconds(), "page-cpu-speed-of-table")
	b.ReportMetric(float64(fi.Size())/1e6, "page-MB")

	tb := open(b, path)
	var load, redraw float64
	tb.eval(`threadcapPage.loadMs()`, &load)
	c := tb.box("#chart")
	tb.drag(c.X+50+0.3*(c.W-70), c.X+50+0.6*(c.W-70), c.Y+c.H/2)
	tb.eval(`threadcapPage.renderMs()`, &redraw)
	b.ReportMetric(load, "load-ms")
	b.ReportMetric(redraw, "drag-redraw-ms")
	tb.clean()
}

// cpuTime is the CPU time the process has used, in user and kernel mode.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
