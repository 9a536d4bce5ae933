// SPDX-License-Identifier: Apache-2.0

package reliability

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/test/workload"
)

// visible is the documented escaping of what these tests feed in: ESC and CR shown as
// symbols, an invalid byte as U+FFFD, newlines and quotes kept (the field is quoted).
var visible = strings.NewReplacer("\x1b", "\u241b", "\r", "\u240d", "\xff", "\uFFFD", "\xfe", "\uFFFD").Replace

// TestHostileNamesRoundTrip gives real threads hostile names with prctl(PR_SET_NAME) and
// runs a copy of sleep from hostile paths, up to 4 KiB long, then reads the hour file back
// with a standard CSV reader: every row has the header's field count, and each name and path
// reads back as it was, escaped as documented, never as a formula or an escape sequence.
func TestHostileNamesRoundTrip(t *testing.T) {
	names := map[string]string{ // thread name (at most 15 bytes, as comm) -> what the file says
		"a,b\"c":          "a,b\"c",
		"two\nlines":      "two\nlines",
		"=cmd|' /C calc":  "'=cmd|' /C calc",
		"@SUM(1)":         "'@SUM(1)",
		"\xff\xfe bad":    "\uFFFD\uFFFD bad",
		"\x1b[2J\x1b]0;x": "\u241b[2J\u241b]0;x",
		"cr\rhidden":      "cr\u240dhidden",
	}
	tids := map[string]string{} // tid -> want
	for name, want := range names {
		tids[strconv.Itoa(namedThread(t, name))] = want
	}

	root := t.TempDir()
	long := root
	for len(long) < 3900 {
		long = filepath.Join(long, strings.Repeat("d", 200))
	}
	exes := []string{
		filepath.Join(root, "a,b", "q\"uote", "sleep"),
		filepath.Join(root, "new\nline", "=cmd"),
		filepath.Join(root, "esc\x1b[31mred", "bad\xffutf8", "-sleep"),
		filepath.Join(long, "sleep"),
	}
	pids := []int32{int32(os.Getpid())}
	wantExe := map[string]string{} // pid -> want
	for _, exe := range exes {
		pid := runCopyOfSleep(t, exe)
		pids = append(pids, int32(pid))
		want := visible(exe)
		if strings.HasPrefix(want, "-") {
			want = "'" + want
		}
		wantExe[strconv.Itoa(pid)] = want
	}

	p := startPipeline(t, options{interval: 100 * time.Millisecond, filter: sampler.Filter{All: true, Pids: pids}})
	time.Sleep(time.Second)
	p.stop(t)
	if err := p.writer.Close(); err != nil {
		t.Fatal(err)
	}
	tid, pid, thread, exe := column(t, "tid"), column(t, "pid"), column(t, "thread"), column(t, "exe")
	found := map[string]bool{}
	for _, row := range readHours(t, p.dir) {
		if want, ok := tids[row[tid]]; ok {
			found[row[tid]] = true
			if row[thread] != want {
				t.Errorf("thread %s is named %q in the file, want %q", row[tid], row[thread], want)
			}
		}
		if want, ok := wantExe[row[pid]]; ok {
			found[row[pid]] = true
			if row[exe] != want {
				t.Errorf("process %s has exe %q in the file, want %q", row[pid], row[exe], want)
			}
		}
	}
	if len(found) != len(tids)+len(wantExe) {
		t.Errorf("%d of the %d hostile threads and processes have rows", len(found), len(tids)+len(wantExe))
	}
	for _, b := range []byte{0x1b, '\r'} {
		for _, name := range mustGlob(t, p.dir) {
			if content, _ := os.ReadFile(name); strings.IndexByte(string(content), b) >= 0 {
				t.Errorf("%s holds the raw control character %#x", name, b)
			}
		}
	}
}

// namedThread starts a thread that names itself name and sleeps until the test ends.
func namedThread(t *testing.T, name string) int {
	t.Helper()
	tids, stop := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		b := append([]byte(name), 0)
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0); err != nil {
			t.Errorf("naming a thread %q: %v", name, err)
		}
		tids <- unix.Gettid()
		<-stop
	}()
	t.Cleanup(func() { close(stop) })
	return <-tids
}

// runCopyOfSleep copies sleep to path and runs it for the rest of the test.
func runCopyOfSleep(t *testing.T, path string) int {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return workload.Process(t, exec.Command(path, "60"))
}

func mustGlob(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "threadcap_samples_*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}
