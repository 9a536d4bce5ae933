// SPDX-License-Identifier: Apache-2.0

// Package reliability holds the tests that keep threadcap's promises under load, faults and
// hostile input; RELIABILITY.md lists each promise and the figures these tests measured.
package reliability

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/bpf"
	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/sampler"
	"github.com/threadcap/threadcap/test/privileged"
)

// pipeline is the tracker, sampler and writer of `threadcap run`, in the test's process,
// so that a test can count what the daemon only logs: kernel records, heap, rows. It is
// not all of run's wiring: no block I/O, symbolizer, spans or metrics, which these tests
// do not exercise; the tests that need them run the binary (daemon_test.go).
type pipeline struct {
	tracker *bpf.Tracker
	writer  *output.Writer
	sampler *sampler.Sampler
	dir     string
	hook    *logtest.Hook
	cancel  context.CancelFunc
	done    chan error
}

// options say how a test's pipeline differs from the daemon's.
type options struct {
	capacity uint32 // records; 0 for the default
	interval time.Duration
	filter   sampler.Filter
	wall     func() time.Time                // the sampler's and writer's clock; time.Now when nil
	wrap     func(sampler.Sink) sampler.Sink // what the sampler writes to instead of the writer
}

// startPipeline loads the kernel side, seeds and starts sampling into hour files in a new
// directory. Threads of the test itself get rows too.
func startPipeline(t *testing.T, o options) *pipeline {
	t.Helper()
	privileged.Require(t)
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	p := &pipeline{dir: t.TempDir(), hook: hook, done: make(chan error, 1)}
	var err error
	if o.wall == nil {
		o.wall = time.Now
	}
	if p.tracker, err = bpf.Open(bpf.Config{Capacity: o.capacity}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.tracker.Close() })
	if p.writer, err = output.New(output.Config{Dir: p.dir, Compress: output.CompressNone,
		Clock: o.wall, Log: logger.WithField("component", "output")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.writer.Close() })
	var sink sampler.Sink = p.writer
	if o.wrap != nil {
		sink = o.wrap(sink)
	}
	if p.sampler, err = sampler.New(sampler.Config{
		Interval: o.interval, Filter: o.filter, Self: -1, Mono: bpf.Now, Wall: o.wall,
		Log: logger.WithField("component", "sampler"),
	}, p.tracker, sink); err != nil {
		t.Fatal(err)
	}
	if err := p.sampler.Seed(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- p.sampler.Run(ctx) }()
	t.Cleanup(cancel)
	return p
}

// stop ends sampling and fails the test if the tick loop stopped with an error.
func (p *pipeline) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	if err := <-p.done; err != nil {
		t.Fatalf("sampling stopped with an error: %v", err)
	}
}

// readHours parses every hour file in dir as a DBA's CSV reader would: each must start
// with the header, hold it once, and every row must have the header's field count. It
// returns the rows (header excluded) of all files.
func readHours(t *testing.T, dir string) [][]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "threadcap_samples_*.csv"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no hour files in %s: %v", dir, err)
	}
	var rows [][]string
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r := csv.NewReader(f)
		r.FieldsPerRecord = len(schema.Columns)
		header, err := r.Read()
		if err != nil || strings.Join(header, ",")+"\n" != schema.Header() {
			t.Fatalf("%s does not start with the header: %q, %v", name, header, err)
		}
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s is not valid CSV: %v", name, err)
			}
			if rec[0] == header[0] {
				t.Fatalf("%s holds a second header", name)
			}
			rows = append(rows, rec)
		}
		f.Close()
	}
	return rows
}

// column is the index of a column by name.
func column(t *testing.T, name string) int {
	t.Helper()
	for i, c := range schema.Columns {
		if c.Name == name {
			return i
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

// logged counts entries at level whose message contains part.
func logged(hook *logtest.Hook, level logrus.Level, part string) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Level == level && strings.Contains(e.Message, part) {
			n++
		}
	}
	return n
}
