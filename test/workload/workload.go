// SPDX-License-Identifier: Apache-2.0

// Package workload starts the real threads the privileged tests watch: spinners,
// sleepers, blocked readers and a vfork parent.
package workload

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Thread is an OS thread running one workload until the test ends.
type Thread struct {
	Tid  int
	stop chan struct{}
}

// start runs body on a goroutine locked to its own OS thread and returns that thread's id.
// body must return once stop is closed; the thread then exits with it.
func start(t testing.TB, body func(stop <-chan struct{})) *Thread {
	t.Helper()
	th := &Thread{stop: make(chan struct{})}
	tids := make(chan int)
	go func() {
		// Never unlocked: the thread exits with the goroutine instead of being reused.
		runtime.LockOSThread()
		tids <- syscall.Gettid()
		body(th.stop)
	}()
	th.Tid = <-tids
	t.Cleanup(func() { close(th.stop) })
	return th
}

// ShortThreads starts n threads at once, each ending as soon as it has started, waits for
// them and returns their tids.
func ShortThreads(n int) []int32 {
	tids := make(chan int32, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Exiting while locked makes the runtime end the thread instead of reusing it.
			runtime.LockOSThread()
			tids <- int32(syscall.Gettid())
		}()
	}
	wg.Wait()
	close(tids)
	out := make([]int32, 0, n)
	for tid := range tids {
		out = append(out, tid)
	}
	return out
}

// Spinner burns CPU in user space.
func Spinner(t testing.TB) *Thread {
	return start(t, func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < 1_000_000; i++ {
			}
		}
	})
}

// Sleeper sits in nanosleep, a second at a time.
func Sleeper(t testing.TB) *Thread {
	return start(t, func(stop <-chan struct{}) {
		ts := syscall.Timespec{Sec: 1}
		for {
			select {
			case <-stop:
				return
			default:
			}
			syscall.Nanosleep(&ts, nil)
		}
	})
}

// PipeReader blocks in read(2) on the read end of a pipe until the test ends. It returns
// the thread and the fd it reads.
func PipeReader(t testing.TB) (*Thread, int) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	th := start(t, func(stop <-chan struct{}) {
		buf := make([]byte, 1)
		syscall.Read(fds[0], buf)
		<-stop
	})
	t.Cleanup(func() {
		syscall.Write(fds[1], []byte{0})
		syscall.Close(fds[1])
		syscall.Close(fds[0])
	})
	return th, fds[0]
}

// VforkParentEnv names a vfork_parent built beforehand, for test binaries run where there
// is no compiler (the kernel matrix's guests).
const VforkParentEnv = "THREADCAP_VFORK_PARENT"

// VforkParent starts a process whose main thread waits in vfork (uninterruptible) while
// its child sleeps for d. It needs a C compiler (cc), as vfork cannot be used from Go,
// unless VforkParentEnv names the built program.
func VforkParent(t testing.TB, d time.Duration) *os.Process {
	t.Helper()
	cmd := exec.Command(vforkParent(t), strconv.Itoa(int(d/time.Second)))
	Process(t, cmd)
	return cmd.Process
}

// VforkCycles starts a process whose main thread, for d, waits inD in vfork (D), then
// sleeps asleep in nanosleep, and again; d is whole seconds, the others milliseconds.
func VforkCycles(t testing.TB, d, inD, asleep time.Duration) *os.Process {
	t.Helper()
	cmd := exec.Command(vforkParent(t), strconv.Itoa(int(d/time.Second)),
		strconv.Itoa(int(inD/time.Millisecond)), strconv.Itoa(int(asleep/time.Millisecond)))
	Process(t, cmd)
	return cmd.Process
}

// vforkParent is the vfork_parent program: VforkParentEnv's, or built from its source.
func vforkParent(t testing.TB) string {
	t.Helper()
	return cProgram(t, VforkParentEnv, "vfork_parent")
}

// cProgram is the program name, built from name.c beside this file with cc, or the one
// the environment variable env names, built beforehand.
func cProgram(t testing.TB, env, name string) string {
	t.Helper()
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), name)
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), name+".c")
	if out, err := exec.Command("cc", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// SpanWork builds spanwork.c: a program whose tc_work spins then sleeps, called between
// its own USDT probes threadcap:work__start (call number, label) and threadcap:work__done.
// Run it as: spanwork CALLS SPIN_MS SLEEP_MS [IDLE_MS [GAP_MS]] (a time may end in "us"
// for microseconds): each call spins then sleeps inside its spans, then spins GAP outside
// them; it writes "calls" and the Unix µs on stderr before the first call, "idle" and the
// µs after the last, then sleeps IDLE outside any span. It needs a C compiler (cc),
// unless SpanWorkEnv names the built program.
func SpanWork(t testing.TB) string {
	t.Helper()
	return cProgram(t, SpanWorkEnv, "spanwork")
}

// SpanWorkEnv names a spanwork built beforehand, as VforkParentEnv does vfork_parent.
const SpanWorkEnv = "THREADCAP_SPANWORK"

// SpanWorkSpans is the spans section of a config for spanwork at bin: span call (its USDT
// probes, with the call number and label) and, inside it, span work (tc_work's entry to
// its return).
func SpanWorkSpans(bin string) string {
	return fmt.Sprintf(`spans:
  - name: call
    binary: %s
    start: usdt threadcap:work__start
    end: usdt threadcap:work__done
    int_arg: 1
    text_arg: 2
  - name: work
    binary: %s
    start: entry tc_work
    end: return tc_work
`, bin, bin)
}

// Burster runs on CPU for burst, then sleeps, once every period.
func Burster(t testing.TB, burst, period time.Duration) *Thread {
	return start(t, func(stop <-chan struct{}) {
		for {
			end := time.Now().Add(burst)
			for time.Now().Before(end) {
			}
			select {
			case <-stop:
				return
			case <-time.After(period - burst):
			}
		}
	})
}

// SpinnerProcess starts a single-threaded process that burns CPU in user space (a shell
// loop of builtins), free of this test process's own Go scheduler. It returns its pid,
// which is also its only thread's tid.
func SpinnerProcess(t testing.TB) int {
	t.Helper()
	return Process(t, exec.Command("sh", "-c", "while :; do :; done"))
}

// Apart gives the single-threaded process pid a CPU of its own until the test ends: every
// thread of this test process moves to CPU 0 (the threads it starts later inherit that)
// and pid to CPU 1. Then a tick that looks at pid never has to preempt it on its CPU to
// run, which would show it waiting for the CPU at exactly the instants it is sampled.
// With one CPU there is nothing to keep apart and nothing is moved. pid also gets the
// highest priority (nice -20), so that other work on the machine takes about 1% of its
// CPU instead of half.
func Apart(t testing.TB, pid int) {
	t.Helper()
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, -20); err != nil {
		t.Fatalf("raising the priority of pid %d: %v", pid, err)
	}
	if runtime.NumCPU() < 2 {
		return
	}
	var mine, its unix.CPUSet
	mine.Set(0)
	its.Set(1)
	if err := unix.SchedSetaffinity(pid, &its); err != nil {
		t.Fatalf("moving pid %d to CPU 1: %v", pid, err)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	setAll := func(set *unix.CPUSet) error {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range tids {
			tid, _ := strconv.Atoi(e.Name())
			// A thread can exit between the listing and the call.
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		return nil
	}
	if err := setAll(&mine); err != nil {
		t.Fatalf("moving this test process to CPU 0: %v", err)
	}
	t.Cleanup(func() {
		if err := setAll(&all); err != nil {
			t.Errorf("giving this test process its CPUs back: %v", err)
		}
	})
}

// Process starts cmd, which is killed when the test ends, and returns its pid.
func Process(t testing.TB, cmd *exec.Cmd) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("running %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// StealUs is the time, in microseconds, the hypervisor has run something else while one
// of this machine's CPUs had work (all CPUs together, /proc/stat's steal), at the 10 ms
// granularity the kernel counts it in.
func StealUs(t testing.TB) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 9 || fields[0] != "cpu" {
		t.Fatalf("unexpected /proc/stat: %q", line)
	}
	ticks, err := strconv.ParseUint(fields[8], 10, 64)
	if err != nil {
		t.Fatalf("steal in /proc/stat: %v", err)
	}
	return ticks * 10_000 // USER_HZ is 100 on Linux
}

// Schedstat is /proc/TID/schedstat: nanoseconds thread tid has spent on CPU and waiting on
// a runqueue (run_delay), the kernel's own figures the tests check threadcap against.
func Schedstat(t testing.TB, tid int) (onCPU, runDelay uint64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("/proc/%d/schedstat: %q", tid, b)
	}
	onCPU, _ = strconv.ParseUint(f[0], 10, 64)
	runDelay, _ = strconv.ParseUint(f[1], 10, 64)
	return onCPU, runDelay
}

// InCgroup moves process pid into a new child cgroup of the cgroup v2 hierarchy mounted at
// mount, and returns the cgroup's path as /proc/PID/cgroup shows it. The cgroup is removed
// when the test ends; register the process's own cleanup (which ends it) after this call's,
// so that it runs first and leaves the cgroup empty.
func InCgroup(t testing.TB, mount string, pid int) string {
	t.Helper()
	name := "/threadcap-test-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join(mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating a test cgroup: %v", err)
	}
	t.Cleanup(func() {
		// The process may be gone already; children it forked meanwhile exit on their own.
		os.WriteFile(filepath.Join(mount, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("test cgroup %s could not be removed", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("moving process %d into %s: %v", pid, dir, err)
	}
	return name
}

// FifoReader blocks in read(2) on a named pipe until the test ends. It returns the thread
// and the pipe's path.
func FifoReader(t testing.TB) (*Thread, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write, so that opening does not wait for a writer (Linux allows it on a FIFO).
	fd, err := syscall.Open(path, syscall.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	th := start(t, func(stop <-chan struct{}) {
		buf := make([]byte, 1)
		syscall.Read(fd, buf)
		<-stop
	})
	t.Cleanup(func() {
		syscall.Write(fd, []byte{0})
		syscall.Close(fd)
	})
	return th, path
}

// Accepter blocks in accept(2) on a TCP socket listening on 127.0.0.1 until the test ends.
// It returns the thread and the port. Go's net package would wait in epoll instead.
func Accepter(t testing.TB) (*Thread, int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	loopback := &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := syscall.Bind(fd, loopback); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	th := start(t, func(stop <-chan struct{}) {
		if nfd, _, err := syscall.Accept(fd); err == nil {
			syscall.Close(nfd)
		}
		<-stop
	})
	t.Cleanup(func() {
		// A connection ends the accept; the thread then waits for stop and exits.
		if c, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err == nil {
			syscall.Connect(c, &syscall.SockaddrInet4{Addr: loopback.Addr, Port: port})
			syscall.Close(c)
		}
		syscall.Close(fd)
	})
	return th, port
}

// FreePort is a TCP port of 127.0.0.1 that nothing listens on, for a test's own server. The
// kernel picks it from the ephemeral range, where no configured server waits to claim it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// SyscallStorm makes the cheapest syscall (getppid) in a loop: two raw_syscalls events
// every few hundred nanoseconds, each a write of the thread's record.
func SyscallStorm(t testing.TB) *Thread {
	return start(t, func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 10_000 {
				syscall.Getppid()
			}
		}
	})
}

// PingPong runs two threads that hand one byte back and forth over a pair of pipes, as
// fast as the scheduler switches them: a context switch and a wakeup per hand-over.
func PingPong(t testing.TB) (*Thread, *Thread) {
	t.Helper()
	var ping, pong [2]int
	if err := syscall.Pipe(ping[:]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Pipe(pong[:]); err != nil {
		t.Fatal(err)
	}
	// Closing the write ends last ends both threads' reads: each exits on a failed read.
	t.Cleanup(func() {
		for _, fd := range []int{ping[1], pong[1], ping[0], pong[0]} {
			syscall.Close(fd)
		}
	})
	relay := func(in, out int) func(stop <-chan struct{}) {
		return func(stop <-chan struct{}) {
			buf := []byte{0}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n, err := syscall.Read(in, buf); err != nil || n == 0 {
					return
				}
				if _, err := syscall.Write(out, buf); err != nil {
					return
				}
			}
		}
	}
	a, b := start(t, relay(ping[0], pong[1])), start(t, relay(pong[0], ping[1]))
	syscall.Write(ping[1], []byte{0})
	return a, b
}

// Ticker wakes every period from nanosleep: a high-resolution timer firing on its CPU,
// whose wakeup runs in hard interrupt context, inside whatever that CPU was doing.
func Ticker(t testing.TB, period time.Duration) *Thread {
	return start(t, func(stop <-chan struct{}) {
		ts := syscall.NsecToTimespec(period.Nanoseconds())
		for {
			select {
			case <-stop:
				return
			default:
			}
			syscall.Nanosleep(&ts, nil)
		}
	})
}

// LoopbackTCP is a listener on network's loopback address ("tcp4" or "tcp6") and a
// connection to it, both ends, closed when the test ends.
func LoopbackTCP(t *testing.T, network string) (ln *net.TCPListener, client, server *net.TCPConn) {
	t.Helper()
	l, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := net.Dial(network, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return l.(*net.TCPListener), c.(*net.TCPConn), sc.(*net.TCPConn)
}
