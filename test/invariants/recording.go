// SPDX-License-Identifier: Apache-2.0

// Package invariants checks what must hold of every row threadcap writes, whatever runs
// beside it: no more threads on CPU than CPUs, times that add up to the interval, every
// thread's CPU time against the kernel's own schedstat, and states sampled as often as
// they last. The test records the whole machine while a real database, a parallel build
// and more spinners than CPUs run.
package invariants

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// row is one sample row, with the columns the invariants read.
type row struct {
	tick            int64 // sample_time, Unix µs
	pid, tid        int
	process, thread string
	state           string
	cpu             int // -1 when empty
	seeded          bool
	times           [state.TimedStates]int64 // on_cpu_us … stopped_us
	timed           bool                     // every time column has a value
}

// name is how a violation names the row's thread.
func (r *row) name() string {
	return fmt.Sprintf("%d/%d (%s/%s)", r.pid, r.tid, r.process, r.thread)
}

// sum is the row's time in every state.
func (r *row) sum() int64 {
	var s int64
	for _, v := range r.times {
		s += v
	}
	return s
}

// recording is every row and tick of a daemon run.
type recording struct {
	ticks []int64 // every tick taken, Unix µs, in order
	rows  []row   // in file order
}

// readRecording reads every samples and ticks file in dir, closed hours too.
func readRecording(dir string) (*recording, error) {
	rec := &recording{}
	samples, err := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv*"))
	if err != nil {
		return nil, err
	}
	ticks, err := filepath.Glob(filepath.Join(dir, "threadcap_ticks_*.csv*"))
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 || len(ticks) == 0 {
		return nil, fmt.Errorf("%s holds %d samples and %d ticks files, want both", dir, len(samples), len(ticks))
	}
	for _, path := range samples {
		if err := readCSV(path, schema.Header(), rec.addRow); err != nil {
			return nil, err
		}
	}
	for _, path := range ticks {
		err := readCSV(path, schema.TicksHeader(), func(_ map[string]int, f []string) error {
			t, err := parseTime(f[0])
			rec.ticks = append(rec.ticks, t)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(rec.ticks)
	rec.ticks = slices.Compact(rec.ticks)
	return rec, nil
}

// readCSV calls each with every record of the file at path after its header, which must be
// header; col maps the header's names to field indexes.
func readCSV(path, header string, each func(col map[string]int, fields []string) error) error {
	if strings.HasSuffix(path, ".tmp") {
		return nil // a compression in progress: the plain file is still there
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var in io.Reader = f
	switch {
	case strings.HasSuffix(path, ".csv.gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		in = zr
	case strings.HasSuffix(path, ".csv.zst"):
		zr, err := zstd.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		in = zr
	}
	cr := csv.NewReader(in)
	names, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: header: %w", path, err)
	}
	if got := strings.Join(names, ",") + "\n"; got != header {
		return fmt.Errorf("%s: header %q, want %q", path, got, header)
	}
	col := map[string]int{}
	for i, n := range names {
		col[n] = i
	}
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := each(col, fields); err != nil {
			line, _ := cr.FieldPos(0)
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// timedColumns are the time columns, in the order of state.State.
var timedColumns = [state.TimedStates]string{"on_cpu_us", "runnable_us", "sleeping_us", "uninterruptible_us", "stopped_us"}

func (rec *recording) addRow(col map[string]int, f []string) error {
	var r row
	var err error
	if r.tick, err = parseTime(f[col["sample_time"]]); err != nil {
		return err
	}
	if r.pid, err = strconv.Atoi(f[col["pid"]]); err != nil {
		return fmt.Errorf("pid: %w", err)
	}
	if r.tid, err = strconv.Atoi(f[col["tid"]]); err != nil {
		return fmt.Errorf("tid: %w", err)
	}
	r.process, r.thread, r.state = f[col["process"]], f[col["thread"]], f[col["state"]]
	r.cpu = -1
	if v := f[col["cpu"]]; v != "" {
		if r.cpu, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	r.seeded = f[col["seeded"]] == "true"
	r.timed = true
	for i, name := range timedColumns {
		v := f[col[name]]
		if v == "" {
			r.timed = false
			continue
		}
		if r.times[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	rec.rows = append(rec.rows, r)
	return nil
}

// parseTime reads a sample_time as Unix µs.
func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixMicro(), nil
}
