// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

// churn starts n threads that exit at once and returns the tids of those that did: Go
// parks the main thread instead of ending it, should one of the goroutines land there.
func churn(n int) map[int32]bool {
	set := map[int32]bool{}
	for _, tid := range workload.ShortThreads(n) {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(int(tid))); err != nil {
			set[tid] = true
		}
	}
	return set
}

// reap frees the slots of exited threads, as the sampler does after each tick, and
// returns how many records of the given threads were still there. No thread may have two
// records (two events that saw it first at once would give it two, one never written
// again).
func reap(t *testing.T, tr *Tracker, tids map[int32]bool) (left int) {
	t.Helper()
	type thread struct {
		tid   int32
		start uint64
	}
	seen := map[thread]uint32{}
	tr.Scan(0, 0, nil, func(slot uint32, th *state.Thread) {
		if other, ok := seen[thread{th.Tid, th.StartNs}]; ok {
			t.Errorf("thread %d has two records, in slots %d and %d", th.Tid, other, slot)
		}
		seen[thread{th.Tid, th.StartNs}] = slot
		if th.State == state.Dead {
			if err := tr.Free(slot); err != nil {
				t.Fatal(err)
			}
			return
		}
		if tids[th.Tid] {
			left++
		}
	})
	return left
}

func TestShortLivedThreadsLeaveNoRecords(t *testing.T) {
	tr := openTracker(t, Config{})
	const rounds, perRound = 10, 1000
	var high uint32
	for range rounds {
		tids := churn(perRound)
		// A thread's last switch-out can trail its exit by a moment.
		time.Sleep(50 * time.Millisecond)
		reap(t, tr, nil)
		if len(tids) < perRound/2 {
			t.Fatalf("only %d of %d threads exited", len(tids), perRound)
		}
		if left := reap(t, tr, tids); left != 0 {
			t.Fatalf("%d of %d exited threads still have records", left, len(tids))
		}
		high = max(high, tr.Slots())
	}
	t.Logf("%d threads churned; slots ever used: %d", rounds*perRound, high)
	if high >= rounds*perRound {
		t.Errorf("slots are not reused: %d used for %d threads in rounds of %d", high, rounds*perRound, perRound)
	}
}

func TestFullMapIsCounted(t *testing.T) {
	const capacity = 16
	tr := openTracker(t, Config{Capacity: capacity})
	churn(100)
	time.Sleep(100 * time.Millisecond)
	c, err := tr.Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capacity %d: %+v", capacity, c)
	if c.UntrackedThreads == 0 || c.LostUpdates == 0 {
		t.Errorf("with room for %d threads, counters show no loss: %+v", capacity, c)
	}
	if n := tr.Slots(); n != capacity {
		t.Errorf("Slots() = %d, want the capacity %d", n, capacity)
	}
}

// openInChild is what the Open tests' child process (this test binary, run again) does:
// Open, then exit 4 with the error on stderr, or 3 if Open succeeded.
func openInChild() {
	if os.Getenv("THREADCAP_OPEN_AS_CHILD") != "1" {
		return
	}
	_, err := Open(Config{})
	if err == nil {
		os.Exit(3)
	}
	os.Stderr.WriteString(err.Error())
	os.Exit(4)
}

// TestOpenUnprivileged runs Open as user nobody in a child process and checks that the
// error says what to do.
func TestOpenUnprivileged(t *testing.T) {
	openInChild()
	openTracker(t, Config{Capacity: 1}) // root only; the tracker itself is not used
	dir, err := os.MkdirTemp("", "threadcap-test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "bpf.test")
	self, _ := os.ReadFile(os.Args[0])
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOpenUnprivileged$")
	cmd.Env = append(os.Environ(), "THREADCAP_OPEN_AS_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("Open as nobody: exit %d, want an error (4); output:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if !strings.Contains(string(out), "run threadcap as root") {
		t.Errorf("error as nobody does not say what to do:\n%s", out)
	}
}

// TestOpenWithoutBTF runs Open in a child process with a mount namespace of its own, where
// /sys/kernel/btf is an empty tmpfs: a kernel without BTF, as far as Open can tell.
func TestOpenWithoutBTF(t *testing.T) {
	openInChild()
	privileged.Require(t)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs none /sys/kernel/btf && exec "$0" -test.run='^TestOpenWithoutBTF$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "THREADCAP_OPEN_AS_CHILD=1")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("Open without BTF: exit %d, want an error (4); output:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if !strings.Contains(string(out), "CONFIG_DEBUG_INFO_BTF=y") {
		t.Errorf("error without BTF does not say what the kernel needs:\n%s", out)
	}
}

// TestOpenTooLargeSaysLowerCapacity asks for maps the kernel cannot make.
func TestOpenTooLargeSaysLowerCapacity(t *testing.T) {
	privileged.Require(t)
	tr, err := Open(Config{Capacity: 1 << 31}) // 412 GB of records
	if err == nil {
		tr.Close()
		t.Fatal("Open made 2^31 records")
	}
	if !strings.Contains(err.Error(), "lower capacity") {
		t.Errorf("error does not say what to do: %v", err)
	}
}
