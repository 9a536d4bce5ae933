// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/internal/rowtest"
	"github.com/threadcap/threadcap/output/schema"
)

func TestMain(m *testing.M) { rowtest.Main(m) }

// newYork, tick, mysqlRow and mysqlRows are rowtest's.
var (
	newYork             = rowtest.NewYork
	tick                = rowtest.Tick
	mysqlRow, mysqlRows = rowtest.MysqlRow, rowtest.MysqlRows
)

// fakeClock is the injected clock; tests move it by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// testConfig is a Config for dir with the clock at now, logging into the returned hook.
func testConfig(dir string, now time.Time) (Config, *fakeClock, *logtest.Hook) {
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	clock := &fakeClock{now: now}
	return Config{Dir: dir, Compress: CompressNone, Clock: clock.Now, Log: logger.WithField(fieldComponent, "output")}, clock, hook
}

// newWriter is New(cfg), failing the test if it fails.
func newWriter(t testing.TB, cfg Config) *Writer {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// closeWriter closes w, failing the test if it fails.
func closeWriter(t testing.TB, w *Writer) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readCSV parses a file the way a user's tools would, decompressing by suffix, and returns
// its records with the header first. Every record must have as many fields as its kind's
// header.
func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(readPlain(t, path)))
	r.FieldsPerRecord = strings.Count(kindHeader(filepath.Base(path)), ",") + 1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s does not parse as CSV: %v", path, err)
	}
	return records
}

// kindHeader is the header of the hour file named name.
func kindHeader(name string) string {
	n, _ := hourfile.Parse(name)
	return schema.KindHeader(n.Kind)
}

// readPlain is the uncompressed content of an hour file.
func readPlain(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	switch filepath.Ext(path) {
	case ".gz":
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = gz
	case ".zst":
		zr, err := zstd.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// dirNames lists dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

// countLogs counts log entries at level whose message is msg.
func countLogs(hook *logtest.Hook, level logrus.Level, msg string) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Level == level && e.Message == msg {
			n++
		}
	}
	return n
}
