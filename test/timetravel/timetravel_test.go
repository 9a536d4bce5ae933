// SPDX-License-Identifier: Apache-2.0

package timetravel

import (
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// breakdown is the part of `threadcap report --format json` the test reads.
type breakdown struct {
	Ticks  int64
	Groups []struct {
		Values     map[string]string
		AvgThreads float64 `json:"avg_threads"`
		CPUSeconds float64 `json:"cpu_seconds"`
		Inactive   int64   `json:"inactive_rows"`
	}
	Timeline []struct {
		Start  time.Time
		Ticks  int64
		States map[string]float64
	}
}

// nobody is the unprivileged user and group the report runs as.
const nobody = 65534

// report runs `threadcap report` over the recording's window, as a user would, in JSON.
func report(t *testing.T, rec *Recording, args ...string) breakdown {
	t.Helper()
	return reportAs(t, rec, nil, args...)
}

// reportAs runs the report with the given credentials, or the test's own when nil.
func reportAs(t *testing.T, rec *Recording, cred *syscall.Credential, args ...string) breakdown {
	t.Helper()
	args = append([]string{"report", "--dir", rec.Dir, "--format", "json",
		"--from", rec.From.Format(time.RFC3339Nano), "--to", rec.To.Format(time.RFC3339Nano)}, args...)
	cmd := exec.Command(rec.Bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("threadcap %v: %v", args, err)
	}
	var b breakdown
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("threadcap %v printed what is not JSON: %v\n%s", args, err, out)
	}
	return b
}

// TestTimeTravel records spinners, a sleeper and a D-state vfork parent with the daemon,
// then asks `threadcap report` about the window.
func TestTimeTravel(t *testing.T) {
	rec := Record(t)
	t.Run("breakdown", func(t *testing.T) { checkBreakdown(t, rec) })
	t.Run("timeline", func(t *testing.T) { checkTimeline(t, rec) })
	t.Run("Parquet", func(t *testing.T) { checkParquet(t, rec) })
	t.Run("without privileges", func(t *testing.T) { checkUnprivileged(t, rec) })
}

// checkBreakdown checks that the report says what each workload was doing, and that the
// spinner's CPU seconds are the kernel's.
func checkBreakdown(t *testing.T, rec *Recording) {
	b := report(t, rec, "--by", "pid,process,state,syscall", "--top", "0")
	// A loaded machine skips ticks, so only the most there can be is certain.
	if most := int64(rec.To.Sub(rec.From) / Interval); b.Ticks < 1 || b.Ticks > most {
		t.Errorf("%d ticks in the window, want 1 to %d", b.Ticks, most)
	}
	type seen struct {
		avg      float64 // average threads over all the states and syscalls seen
		states   map[string]float64
		cpuS     float64
		inactive map[string]int64 // rows that are no active session
	}
	byPid := map[int]*seen{}
	for _, g := range b.Groups {
		pid, _ := strconv.Atoi(g.Values["pid"])
		s := byPid[pid]
		if s == nil {
			s = &seen{states: map[string]float64{}, inactive: map[string]int64{}}
			byPid[pid] = s
		}
		s.avg += g.AvgThreads
		s.states[g.Values["state"]+" "+g.Values["syscall"]] += g.AvgThreads
		s.inactive[g.Values["state"]+" "+g.Values["syscall"]] += g.Inactive
		s.cpuS += g.CPUSeconds
		if name := map[int]string{rec.Spinner: SpinnerName, rec.Hog: HogName, rec.Sleeper: SleeperName,
			rec.VforkParent: VforkName}[pid]; g.Values["process"] != name {
			t.Errorf("pid %d shows as process %q, want %q", pid, g.Values["process"], name)
		}
	}
	for name, pid := range map[string]int{"spinner": rec.Spinner, "hog": rec.Hog, "vfork parent": rec.VforkParent} {
		// --all: each single-threaded workload has a row at every tick.
		if s := byPid[pid]; s == nil || math.Abs(s.avg-1) > 1e-9 {
			t.Errorf("%s (pid %d): %+v, want one thread on average", name, pid, s)
		}
	}
	for _, pid := range []int{rec.Spinner, rec.Hog} {
		// Two spinners pinned to one CPU: one runs while the other waits, never in a syscall.
		// How often each is caught running depends on the machine's other load.
		s := byPid[pid]
		if s == nil || s.states["on_cpu "]+s.states["runnable "] != s.avg || s.states["on_cpu "] == 0 || s.states["runnable "] == 0 {
			t.Errorf("spinner pid %d: %+v, want it on CPU or runnable, in user space, seen in both", pid, s)
		}
	}
	// The sleeper has a row at every tick (--all), asleep outside any span: no active
	// session, so no thread on average.
	if s := byPid[rec.Sleeper]; s == nil || s.avg != 0 || s.inactive["sleeping clock_nanosleep"]+s.inactive["sleeping nanosleep"] != b.Ticks {
		t.Errorf("sleeper: %+v, want it always sleeping in clock_nanosleep, at each of the %d ticks, and no active session", s, b.Ticks)
	}
	if s := byPid[rec.VforkParent]; s == nil || s.states["uninterruptible vfork"] != 1 {
		t.Errorf("vfork parent: %+v, want it always uninterruptible in vfork", s)
	}

	want := rec.SpinnerCPU.Seconds()
	if got := byPid[rec.Spinner].cpuS; math.Abs(got-want) > 0.05*want {
		t.Errorf("report says the spinner ran %.3f CPU seconds, schedstat %.3f: more than 5%% apart", got, want)
	} else {
		t.Logf("spinner: %.3f CPU seconds in the report, %.3f by schedstat", got, want)
	}
}

// checkTimeline checks the per-second timeline of the vfork parent: one thread in D state
// in every second of the window that has a tick (a loaded machine may skip a whole second).
func checkTimeline(t *testing.T, rec *Recording) {
	b := report(t, rec, "--timeline", "second", "--where", "pid="+strconv.Itoa(rec.VforkParent))
	if len(b.Timeline) == 0 || len(b.Timeline) > int(rec.To.Sub(rec.From)/time.Second) {
		t.Errorf("%d buckets for a window of %v, want at most one per second", len(b.Timeline), rec.To.Sub(rec.From))
	}
	var ticks int64
	for _, bk := range b.Timeline {
		ticks += bk.Ticks
		if bk.States["uninterruptible"] != 1 || bk.Start.Before(rec.From) || !bk.Start.Before(rec.To) ||
			!bk.Start.Equal(bk.Start.Truncate(time.Second)) {
			t.Errorf("%v: %v, want a second of the window with one thread in uninterruptible state", bk.Start, bk.States)
		}
	}
	if ticks != b.Ticks {
		t.Errorf("the buckets hold %d ticks, the window %d", ticks, b.Ticks)
	}
}

// checkUnprivileged runs the report as a user who may only read the files, through their
// group, as the service's output.group allows.
func checkUnprivileged(t *testing.T, rec *Recording) {
	err := filepath.WalkDir(rec.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, -1, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The temporary directories above the files and the binary are the test's own (0700).
	for _, dir := range []string{filepath.Dir(rec.Dir), filepath.Dir(rec.Bin)} {
		for ; dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := reportAs(t, rec, &syscall.Credential{Uid: nobody, Gid: nobody}, "--by", "state")
	if want := report(t, rec, "--by", "state"); !reflect.DeepEqual(got, want) {
		t.Errorf("as nobody:\n%+v\nas root:\n%+v", got, want)
	}
}
