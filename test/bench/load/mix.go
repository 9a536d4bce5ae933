// SPDX-License-Identifier: Apache-2.0

package load

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Mix is a small database-like workload: worker threads run transactions on one data
// file, each reading a page, writing a page, and now and then syncing the file (a commit)
// or pausing (a client's think time). Its throughput and latency are what a database on
// the traced machine would see.
type Mix struct {
	Workers int
	f       *os.File
}

// Sizes of the data file and of a page, and how often a transaction commits or pauses.
const (
	mixFileBytes = 32 << 20
	mixPage      = 4096
	mixSyncEvery = 8
	mixNapEvery  = 4
	mixNap       = 200 * time.Microsecond
)

// NewMix creates the data file in dir, written once so that reads hit the page cache as a
// warm database's do.
func NewMix(dir string, workers int) (*Mix, error) {
	f, err := os.CreateTemp(dir, "threadcap-bench-mix-*.db")
	if err != nil {
		return nil, fmt.Errorf("creating the mix workload's data file (set a writable dir): %w", err)
	}
	// Unlinked at once: the file goes away with the process, however it ends.
	os.Remove(filepath.Join(dir, filepath.Base(f.Name())))
	page := make([]byte, mixPage)
	for off := int64(0); off < mixFileBytes; off += mixPage {
		if _, err := f.WriteAt(page, off); err != nil {
			f.Close()
			return nil, fmt.Errorf("filling the mix workload's data file: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("syncing the mix workload's data file: %w", err)
	}
	return &Mix{Workers: workers, f: f}, nil
}

// Run reports transactions per second and their latency percentiles.
func (m *Mix) Run(d time.Duration) (Result, error) {
	fd := int(m.f.Fd())
	start := time.Now()
	end := start.Add(d)
	lat := make([][]time.Duration, m.Workers)
	errs := make([]error, m.Workers)
	n := onThreads(m.Workers, func(w int) int64 {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
		page := make([]byte, mixPage)
		var n int64
		for t0 := time.Now(); t0.Before(end); t0 = time.Now() {
			if err := transaction(fd, rng, page, n); err != nil {
				errs[w] = err
				return n
			}
			lat[w] = append(lat[w], time.Since(t0))
			n++
			if n%mixNapEvery == 0 {
				time.Sleep(mixNap)
			}
		}
		return n
	})
	r := Result{OpsPerSec: float64(n) / time.Since(start).Seconds()}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	latencies(&r, all)
	return r, errors.Join(errs...)
}

// transaction reads one random page and writes another; every mixSyncEvery-th one
// commits with fdatasync.
func transaction(fd int, rng *rand.Rand, page []byte, n int64) error {
	pages := int64(mixFileBytes / mixPage)
	if _, err := unix.Pread(fd, page, rng.Int64N(pages)*mixPage); err != nil {
		return fmt.Errorf("reading a page: %w", err)
	}
	page[0]++
	if _, err := unix.Pwrite(fd, page, rng.Int64N(pages)*mixPage); err != nil {
		return fmt.Errorf("writing a page: %w", err)
	}
	if n%mixSyncEvery == 0 {
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("syncing the data file: %w", err)
		}
	}
	return nil
}

// Close closes the data file, which frees it: it has no name left.
func (m *Mix) Close() error { return m.f.Close() }
