// SPDX-License-Identifier: Apache-2.0

package output

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/compress"
	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
	"github.com/threadcap/threadcap/output/retention"
)

// Linux I/O priority for ioprio_set(2); x/sys/unix does not define these.
const (
	ioprioWhoProcess = 1
	ioprioClassIdle  = 3
	ioprioClassShift = 13
)

// runMaintenance compresses and deletes closed hours whenever it is kicked: at start, at
// each new hour, and when space runs out.
func (w *Writer) runMaintenance(ctx context.Context) {
	defer close(w.done)
	w.lowerPriority()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
			w.maintain(ctx)
		}
	}
}

// kickMaintenance never blocks: a kick already pending covers this one, as every pass looks
// at the directory afresh.
func (w *Writer) kickMaintenance() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// lowerPriority keeps compression from competing with the database threadcap is watching.
// Nice and I/O priority are per thread on Linux, so the goroutine keeps its own thread,
// which exits with it; threads the runtime starts later do not inherit the priority, as Go
// starts them from a template thread when the current one is locked.
func (w *Writer) lowerPriority() {
	runtime.LockOSThread()
	tid := unix.Gettid()
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 19); err != nil {
		w.log.WithError(err).Debug("cannot lower the CPU priority of compression")
	}
	prio := uintptr(ioprioClassIdle << ioprioClassShift)
	if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), prio); errno != 0 {
		w.log.WithError(errno).Debug("cannot lower the I/O priority of compression")
	}
}

// currentHour is the hour whose file is or will be open. Before the first Write it is the
// clock's, and it is recorded, so that a first tick from an earlier hour cannot reopen a
// file this pass is compressing.
func (w *Writer) currentHour() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hour.IsZero() {
		w.hour = w.cfg.Clock().UTC().Truncate(time.Hour)
	}
	return w.hour
}

// listHours lists threadcap's files, oldest hour first.
func (w *Writer) listHours() ([]retention.Hour, error) {
	files, err := hourfile.List(w.cfg.Dir)
	if err != nil {
		return nil, err
	}
	hours := make([]retention.Hour, 0, len(files))
	for _, f := range files {
		fi, err := os.Lstat(f.Path)
		if err != nil {
			continue // removed since it was listed
		}
		hours = append(hours, retention.Hour{File: f, Size: fi.Size()})
	}
	return hours, nil
}

// closeHour turns a closed hour's .csv into what the format keeps: Parquet, a compressed
// CSV, or both. The CSV goes only once what replaces it is whole on disk; a failure leaves it
// for the next pass to try again.
func (w *Writer) closeHour(ctx context.Context, h retention.Hour) {
	if w.cfg.Format != FormatCSV && !w.parquetHour(ctx, h) {
		return
	}
	switch {
	case w.cfg.Format == FormatParquet:
		if err := os.Remove(h.Path); err != nil {
			w.log.WithField(fieldFile, h.Path).WithError(err).Error("removing the CSV of an hour kept as Parquet failed")
		}
	case w.cfg.Compress != CompressNone:
		compress.Hour(ctx, w.cfg.Dir, h.File, h.Size, compress.Options{Format: w.cfg.Compress, FileMode: w.cfg.FileMode, GID: w.gid, Log: w.log})
	}
}

// parquetHour writes a closed hour as Parquet, and reports whether its Parquet file is
// whole on disk, so that its CSV may go.
func (w *Writer) parquetHour(ctx context.Context, h retention.Hour) bool {
	log := w.log.WithField(fieldFile, h.Path)
	dst, st, err := parquet.ConvertHour(ctx, w.cfg.Dir, h.File, w.cfg.Host,
		parquet.FileOptions{FileMode: w.cfg.FileMode, DirMode: w.cfg.DirMode, GID: w.gid})
	switch {
	case errors.Is(err, parquet.ErrExists):
		// Written by a pass that stopped before its CSV went.
		return true
	case err != nil:
		if ctx.Err() == nil {
			log.WithError(err).Error("writing the hour as Parquet failed; will retry at the next hour")
		}
		return false
	}
	if st.Malformed > 0 {
		log.WithField(fieldDropped, st.Malformed).Warn("rows of the hour that are not valid CSV were left out of its Parquet file")
	}
	log.WithField(fieldParquet, dst).WithField(fieldRows, st.Rows).Info("wrote hour as Parquet")
	return true
}

// maintain compresses every closed hour, or writes it as Parquet, then applies retention. Files of the current
// hour, or later ones left by a clock that has since gone back, are never touched.
func (w *Writer) maintain(ctx context.Context) {
	w.maintMu.Lock()
	defer w.maintMu.Unlock()
	current := w.currentHour()
	hours, err := w.listHours()
	if err != nil {
		w.log.WithError(err).Error("listing output dir failed")
		return
	}
	for _, h := range hours {
		if h.Suffix != hourfile.CSV || !h.Hour.Before(current) {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.closeHour(ctx, h)
	}
	if hours, err = w.listHours(); err != nil {
		w.log.WithError(err).Error("listing output dir failed")
		return
	}
	retention.Apply(w.log, w.cfg.Dir, hours, current, w.cfg.Clock(), retention.Policy{MaxAge: w.cfg.MaxAge, MaxBytes: w.cfg.MaxBytes, Hold: w.cfg.Hold})
}

// removeStaleTmp removes half-written compressed files a previous run left; their hours are
// still whole in the .csv and are compressed again.
func (w *Writer) removeStaleTmp() {
	hours, err := w.listHours()
	if err != nil {
		w.log.WithError(err).Error("listing output dir failed")
		return
	}
	for _, h := range hours {
		if !strings.HasSuffix(h.Suffix, hourfile.Tmp) {
			continue
		}
		path := h.Path
		if err := os.Remove(path); err != nil {
			w.log.WithField(fieldFile, path).WithError(err).Error("removing stale temporary file failed")
			continue
		}
		w.log.WithField(fieldFile, path).Info("removed stale temporary file")
	}
}
