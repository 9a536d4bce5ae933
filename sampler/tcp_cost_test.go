// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// tcpReadersEnv makes the test binary TestTCPReadersProcess: that many threads, each
// blocked in read(2) on its own loopback TCP connection.
const tcpReadersEnv = "THREADCAP_TCP_READERS"

// TestTCPReadersProcess is not a test: run with tcpReadersEnv set, it connects that many
// blocking sockets (raw syscalls, not Go's netpoller) to a listener of its own, starts a
// thread per socket blocked in read(2) on it, says "ready" and waits to be killed.
func TestTCPReadersProcess(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(tcpReadersEnv))
	if err != nil {
		return
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		os.Exit(2)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var servers []net.Conn // kept open: their peers' reads wait on them
	for range n {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err == nil {
			err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		c, err := ln.Accept()
		if err != nil {
			os.Exit(2)
		}
		servers = append(servers, c)
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(started)
			syscall.Read(fd, make([]byte, 1))
			os.Exit(3) // a read returned: the test's connections broke
		}()
		<-started
	}
	time.Sleep(500 * time.Millisecond) // for the last threads to reach their read
	os.Stdout.WriteString("ready\n")
	select {}
}

// unreadTCP is a TCPSource that reads nothing: the tcp_ columns' rows found, not read.
type unreadTCP struct{}

func (unreadTCP) Read([]bpf.TCPAsk) error { return nil }

// timedTCP times the reads of next, and how long after the tick (set by the caller) each
// began, and keeps the last asks to read them again.
type timedTCP struct {
	next  sampler.TCPSource
	tick  time.Time
	late  time.Duration
	spent time.Duration
	reads int
	last  []bpf.TCPAsk
}

func (t *timedTCP) Read(asks []bpf.TCPAsk) error {
	start := time.Now()
	t.late += start.Sub(t.tick)
	err := t.next.Read(asks)
	t.spent += time.Since(start)
	t.reads++
	t.last = append(t.last[:0], asks...)
	return err
}

// tcpCountSink counts a tick's rows in read and those of them with a TCP state, and hands
// them to the daemon's writer.
type tcpCountSink struct {
	reads, withTCP int
	next           sampler.Sink
}

func (c *tcpCountSink) Write(tick time.Time, rows []state.Sample) error {
	for _, r := range rows {
		if r.Syscall == "read" {
			c.reads++
			if r.TCP.State == "ESTABLISHED" {
				c.withTCP++
			}
		}
	}
	return c.next.Write(tick, rows)
}

// TestTCPColumnsCost measures, with THREADCAP_TCP_COST=1, the daemon's CPU a tick (user
// and system time of this process, in which nothing else runs: the sampler and the hour
// file's writer, uncompressed) with 1,000 threads of
// another process each blocked in read on its own loopback TCP connection, every one a
// row (--all): four samplers on one kernel side, taking turns tick by tick so that the
// machine's load weighs on each alike: fd_target off (no tcp_ columns), fd_target on with
// the rows' sockets found but not read (the tcp_ columns' own cost left out), the tcp_
// columns read in the kernel (bpf.TCPSockets), and read through sock_diag (the way before,
// and still on kernels without bpf_task_from_pid). It logs the ratios to the first two, and
// how long the kernel side's reads took and how long after the tick they began, and their
// time again at once after the last (its memory then in the CPU's caches); it asserts only that the rows are what is measured
// (BENCHMARKS.md has the figures).
func TestTCPColumnsCost(t *testing.T) {
	if os.Getenv("THREADCAP_TCP_COST") != "1" {
		t.Skip("a measurement: THREADCAP_TCP_COST=1 runs it")
	}
	privileged.Require(t)
	const threads, rounds, warmup = 1000, 60, 5
	tr, err := bpf.Open(bpf.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tcp, err := bpf.OpenTCPSockets()
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	// Started with the kernel side attached, which sees each thread enter its read.
	cmd := exec.Command(os.Args[0], "-test.run=^TestTCPReadersProcess$")
	cmd.Env = append(os.Environ(), tcpReadersEnv+"="+strconv.Itoa(threads))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pid := int32(workload.Process(t, cmd))
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the readers did not start: %q, %v", line, err)
	}

	log := logrus.New()
	log.SetOutput(io.Discard)
	type variant struct {
		name    string
		s       *sampler.Sampler
		sink    *tcpCountSink
		cpu     time.Duration
		withTCP bool
	}
	variants := []*variant{{name: "fd_target off"}, {name: "fd_target, tcp_ not read"},
		{name: "tcp_ in the kernel", withTCP: true}, {name: "tcp_ through sock_diag", withTCP: true}}
	timed := &timedTCP{next: tcp}
	for i, v := range variants {
		cfg := sampler.Config{
			Interval: 100 * time.Millisecond, Filter: sampler.Filter{All: true, Pids: []int32{pid}},
			Self: -1, Mono: bpf.Now, Wall: time.Now, Log: logrus.NewEntry(log),
			NoFdTarget: i == 0,
		}
		switch i {
		case 1:
			cfg.TCP = unreadTCP{}
		case 2:
			cfg.TCP = timed
		}
		w, err := output.New(output.Config{Dir: t.TempDir(), Compress: output.CompressNone, Clock: time.Now, Log: logrus.NewEntry(log)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		v.sink = &tcpCountSink{next: w}
		if v.s, err = sampler.New(cfg, tr, v.sink); err != nil {
			t.Fatal(err)
		}
	}
	cpuNow := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for round := range rounds {
		for _, v := range variants {
			time.Sleep(30 * time.Millisecond)
			v.sink.reads, v.sink.withTCP = 0, 0
			before := cpuNow()
			timed.tick = time.Now()
			if err := v.s.Tick(timed.tick); err != nil {
				t.Fatal(err)
			}
			if round >= warmup {
				v.cpu += cpuNow() - before
			}
			if v.sink.reads < threads*99/100 || (v.withTCP && v.sink.withTCP < threads*99/100) {
				t.Fatalf("%s, round %d: %d rows in read, %d with a TCP state; want %d", v.name, round, v.sink.reads, v.sink.withTCP, threads)
			}
		}
	}
	atTicks := timed.spent / time.Duration(timed.reads)
	if err := tcp.Read(timed.last); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tcp.Read(timed.last); err != nil {
		t.Fatal(err)
	}
	t.Logf("the kernel side's read of %d sockets: %.3f ms at a tick, begun %.3f ms after it; %.3f ms again at once",
		len(timed.last), float64(atTicks)/1e6, float64(timed.late/time.Duration(timed.reads))/1e6, float64(time.Since(start))/1e6)
	off, untouched := variants[0].cpu, variants[1].cpu
	for _, v := range variants {
		perTick := v.cpu / (rounds - warmup)
		t.Logf("%-26s %6.2f ms of CPU a tick, %.2f× fd_target off, %.2f× tcp_ not read",
			v.name, float64(perTick)/1e6, float64(v.cpu)/float64(off), float64(v.cpu)/float64(untouched))
	}
}
