// SPDX-License-Identifier: Apache-2.0

package load

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DirectRead is random 4 KiB O_DIRECT reads of a data file by worker threads: every read
// a block request of its own, which is what the io tracking hooks cost most on (a
// database's reads that miss its buffer pool).
type DirectRead struct {
	Workers int
	f       *os.File
}

const (
	directFileBytes = 256 << 20
	directBlock     = 4096
)

// NewDirectRead writes the data file in dir (every block, so reads reach the disk) and
// opens it for O_DIRECT reads.
func NewDirectRead(dir string, workers int) (*DirectRead, error) {
	w, err := os.CreateTemp(dir, "threadcap-bench-direct-*.db")
	if err != nil {
		return nil, fmt.Errorf("creating the directread workload's data file (set a writable dir): %w", err)
	}
	defer w.Close()
	// Unlinked once opened again below: the file goes away with the process.
	defer os.Remove(filepath.Join(dir, filepath.Base(w.Name())))
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < directFileBytes; off += int64(len(chunk)) {
		if _, err := w.WriteAt(chunk, off); err != nil {
			return nil, fmt.Errorf("filling the directread workload's data file: %w", err)
		}
	}
	if err := w.Sync(); err != nil {
		return nil, fmt.Errorf("syncing the directread workload's data file: %w", err)
	}
	f, err := os.OpenFile(w.Name(), os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the directread workload's data file with O_DIRECT: %w", err)
	}
	return &DirectRead{Workers: workers, f: f}, nil
}

// Run reports reads per second and their latency percentiles.
func (d *DirectRead) Run(window time.Duration) (Result, error) {
	fd := int(d.f.Fd())
	start := time.Now()
	end := start.Add(window)
	lat := make([][]time.Duration, d.Workers)
	errs := make([]error, d.Workers)
	n := onThreads(d.Workers, func(w int) int64 {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
		buf := alignedBlock()
		blocks := int64(directFileBytes / directBlock)
		var n int64
		for t0 := time.Now(); t0.Before(end); t0 = time.Now() {
			if _, err := unix.Pread(fd, buf, rng.Int64N(blocks)*directBlock); err != nil {
				errs[w] = fmt.Errorf("reading a block: %w", err)
				return n
			}
			lat[w] = append(lat[w], time.Since(t0))
			n++
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

// alignedBlock is a block-sized buffer at a block boundary, as O_DIRECT wants.
func alignedBlock() []byte {
	b := make([]byte, 2*directBlock)
	skip := (directBlock - int(uintptr(unsafe.Pointer(&b[0]))%directBlock)) % directBlock
	return b[skip : skip+directBlock]
}

// Close closes the data file, which frees it: it has no name left.
func (d *DirectRead) Close() error { return d.f.Close() }
