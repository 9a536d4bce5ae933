// SPDX-License-Identifier: Apache-2.0

// Package output writes samples to hourly CSV files: one file per UTC hour, appended to as
// ticks come in, compressed once the hour is over and deleted by age and total size. The
// Writer owns the hour files' lifecycle, the side files beside them and the pause while
// they cannot be written; its maintenance pass hands closed hours to output/compress,
// output/parquet and output/retention. The rows' columns are output/schema's.
package output

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
	"github.com/threadcap/threadcap/state"
)

// Log field keys.
const (
	fieldComponent = "component"
	fieldFile      = "file"
	fieldTick      = "tick"
	fieldBytes     = "bytes"
	fieldDropped   = "dropped_rows"
	fieldFreeBytes = "free_bytes"
	fieldFloor     = "min_free_bytes"
	fieldReason    = "reason"
	fieldAside     = "moved_to"
	fieldParquet   = "parquet"
	fieldRows      = "rows"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("output writer is closed")

// ErrDirInUse is returned by New when another process holds the directory.
var ErrDirInUse = errors.New("output dir is in use by another threadcap")

// Writer appends samples to the current hour's file. Write and Close may be called from
// different goroutines.
type Writer struct {
	cfg     Config
	log     *logrus.Entry
	gid     int
	dirLock *os.File

	written, dropped atomic.Uint64
	samplesBytes     atomic.Uint64              // bytes of rows (and headers) that reached the samples files
	pausedNow        atomic.Pointer[pauseCause] // paused, for Stats without the lock a stuck write holds

	mu   sync.Mutex // guards everything below, up to maintMu
	file *hourFile
	// hour is the current hour: the open file's, or the clock's before the first Write. It
	// never goes back, so background work can treat every earlier hour as closed.
	hour      time.Time
	buf       []byte
	ends      []int // where each row in buf ends
	lastSync  time.Time
	paused    *pauseCause // why rows are being dropped; nil while writing
	pausedAt  uint64      // dropped count when the pause began
	clockBack bool
	closed    bool
	stacks    stackSet
	ticks     sideFile
	io        sideFile
	spans     sideFile
	profile   sideFile
	lastTick  time.Time // the tick the ticks file has last

	maintMu sync.Mutex // one maintenance pass at a time
	kick    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

// New checks cfg, prepares the directory, takes it for this process, and starts the
// background work that compresses and deletes closed hours, beginning with what a previous
// run left behind.
func New(cfg Config) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid output config: %w", err)
	}
	cfg = cfg.withDefaults()
	var err error
	if cfg.Format != FormatCSV {
		if cfg.Host, err = cfg.HostName(); err != nil {
			return nil, err
		}
	}
	gid, err := LookupGroup(cfg.Group)
	if err != nil {
		return nil, err
	}
	if err := outdir.Prepare(cfg.Dir, cfg.DirMode, gid); err != nil {
		return nil, err
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		cfg: cfg, log: cfg.Log, gid: gid, dirLock: lock,
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		stacks: stackSet{sideFile: sideFile{kind: hourfile.Stacks}}, ticks: sideFile{kind: hourfile.Ticks},
		io: sideFile{kind: hourfile.IO}, spans: sideFile{kind: hourfile.Spans},
		profile: sideFile{kind: hourfile.Profile},
	}
	w.removeStaleTmp()
	go w.runMaintenance(ctx)
	w.kickMaintenance()
	return w, nil
}

// lockDir stops a second threadcap from appending to the same files, which would interleave
// partial rows.
func lockDir(dir string) (*os.File, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening output dir: %w", err)
	}
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w; stop it or use another dir", dir, ErrDirInUse)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return d, nil
}

// WrittenRows is how many rows have reached a file.
func (w *Writer) WrittenRows() uint64 { return w.written.Load() }

// DroppedRows is how many rows were not written, whole, because the disk was full or below
// MinFreeBytes, or a write failed. Every row given to Write is counted exactly once, in
// WrittenRows or here.
func (w *Writer) DroppedRows() uint64 { return w.dropped.Load() }

// Why writing is paused, as Stats names it.
const (
	PausedNoSpace    = "no_space"    // the disk is full, or below MinFreeBytes
	PausedReadOnly   = "read_only"   // the file system went read-only
	PausedWriteError = "write_error" // any other failure to open or write the hour file
)

// PauseCauses are every cause Stats.Paused can name.
func PauseCauses() []string { return []string{PausedNoSpace, PausedReadOnly, PausedWriteError} }

// Stats are the writer's counts since it started.
type Stats struct {
	WrittenRows, DroppedRows uint64
	// Bytes are the bytes written to each kind of hour file, headers included, before
	// compression.
	Bytes map[hourfile.Kind]uint64
	// Paused is why rows are being dropped (one of PauseCauses); "" while writing.
	Paused string
}

// Stats returns the counts so far. It may be called from any goroutine, and does not wait
// for a write in progress: a writer stuck on its disk still reports.
func (w *Writer) Stats() Stats {
	st := Stats{
		WrittenRows: w.written.Load(), DroppedRows: w.dropped.Load(),
		Bytes: map[hourfile.Kind]uint64{
			hourfile.Samples: w.samplesBytes.Load(),
			hourfile.Stacks:  w.stacks.written.Load(),
			hourfile.Ticks:   w.ticks.written.Load(),
			hourfile.IO:      w.io.written.Load(),
			hourfile.Spans:   w.spans.written.Load(),
			hourfile.Profile: w.profile.written.Load(),
		},
	}
	if c := w.pausedNow.Load(); c != nil {
		st.Paused = c.name
	}
	return st
}

// Write appends the rows of one tick to the file of tick's hour, starting a new file when
// the hour changes, and hands them to the kernel before returning so that tail -f sees
// them. Failing to write is not an error: rows are dropped and counted, and the cause
// logged once, until a write succeeds again (see pauseCauseOf). The error is ErrClosed
// after Close.
func (w *Writer) Write(tick time.Time, rows []state.Sample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	hour := tick.UTC().Truncate(time.Hour)
	if hour.Before(w.hour) {
		if !w.clockBack {
			w.log.WithField(fieldTick, tick).Warn("clock went back before the current hour; " +
				"rows go to the current hour's file until it catches up")
			w.clockBack = true
		}
		hour = w.hour
	} else {
		w.clockBack = false
	}
	if w.file != nil && w.file.removed() {
		w.log.WithField(fieldFile, w.file.f.Name()).Warn("hour file was deleted while threadcap wrote to it; starting it again")
		if err := w.closeFile(); err != nil {
			w.log.WithError(err).Debug("closing the deleted hour file failed")
		}
	}
	if w.file == nil || !hour.Equal(w.file.hour) {
		if err := w.rotate(hour); err != nil {
			w.pause(pauseCauseOf(err), logrus.Fields{fieldReason: err.Error()})
			w.dropped.Add(uint64(len(rows)))
			return nil
		}
	}
	switch {
	case len(rows) == 0:
	case !w.haveSpace():
		w.dropped.Add(uint64(len(rows)))
	default:
		w.writeStacks(rows)
		w.appendRows(rows)
	}
	w.writeTick(tick)
	return nil
}

// rotate syncs and closes the previous hour's file and opens hour's.
func (w *Writer) rotate(hour time.Time) error {
	if w.file != nil {
		name := w.file.f.Name()
		// The new hour's rows can still be written, so this is logged, not returned.
		if err := w.closeFile(); err != nil {
			w.log.WithField(fieldFile, name).WithError(err).Error("closing the previous hour file failed; its last rows may be lost on power loss")
		}
	}
	w.stacks.failed, w.ticks.failed, w.io.failed, w.spans.failed = false, false, false, false
	w.profile.failed = false
	hf, rep, err := openHourFile(w.cfg.Dir, hour, w.cfg.FileMode, w.gid)
	if errors.Is(err, os.ErrNotExist) {
		if rerr := w.recreateDir(); rerr != nil {
			return errors.Join(err, rerr)
		}
		hf, rep, err = openHourFile(w.cfg.Dir, hour, w.cfg.FileMode, w.gid)
	}
	if err != nil {
		return err
	}
	w.file, w.hour, w.lastSync = hf, hour, w.cfg.Clock()
	log := w.log.WithField(fieldFile, hf.f.Name())
	if rep.setAside != "" {
		log.WithField(fieldAside, rep.setAside).Warn("found another header or a link, FIFO or device under the hour file's name; moved it aside")
	}
	if rep.cutBytes > 0 {
		log.WithField(fieldBytes, rep.cutBytes).Warn("removed the incomplete last row an earlier run left")
	}
	if rep.created {
		log.Info("started hour file")
	} else {
		log.Info("appending to existing hour file")
	}
	w.kickMaintenance()
	return nil
}

// recreateDir makes the output directory again when it was deleted while threadcap ran,
// and locks the new one.
func (w *Writer) recreateDir() error {
	if _, err := os.Stat(w.cfg.Dir); !errors.Is(err, os.ErrNotExist) {
		return nil // something else in the path is missing; the open error says what
	}
	if err := outdir.Prepare(w.cfg.Dir, w.cfg.DirMode, w.gid); err != nil {
		return err
	}
	lock, err := lockDir(w.cfg.Dir)
	if err != nil {
		return err
	}
	w.dirLock.Close()
	w.dirLock = lock
	w.log.WithField(fieldFile, w.cfg.Dir).Warn("output dir was deleted while threadcap ran; created it again")
	return nil
}

// closeFile ends an hour: the rows are synced so that compression reads what a power loss
// would keep. The stacks, ticks and io files beside it are closed with it, so that after a
// failed write all are opened again together, maybe on a new mount.
func (w *Writer) closeFile() error {
	f := w.file.f
	w.file = nil
	return errors.Join(f.Sync(), f.Close(), w.stacks.close(), w.ticks.close(), w.io.close(), w.spans.close(), w.profile.close())
}

// Close syncs and closes the current file and stops background work, abandoning a
// compression in progress (it is redone on the next start).
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	var errs []error
	if w.file != nil {
		errs = append(errs, w.closeFile())
	}
	// The minutes a stop writes may have opened their files with no samples file open (no
	// row since the start, or rows dropped): synced and closed like the rest.
	errs = append(errs, w.spans.close(), w.io.close(), w.profile.close())
	w.mu.Unlock()
	w.cancel()
	<-w.done
	errs = append(errs, w.dirLock.Close())
	return errors.Join(errs...)
}
