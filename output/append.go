// SPDX-License-Identifier: Apache-2.0

package output

import (
	"fmt"
	"sort"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// appendRows encodes rows and writes them with one write call. A write the disk cut short
// keeps the rows that made it whole and takes the rest back off the file, so a reader
// never sees a partial row and every row is counted once, as written or as dropped.
func (w *Writer) appendRows(rows []state.Sample) {
	hf := w.file
	w.buf, w.ends = w.buf[:0], w.ends[:0]
	headerEnd := 0
	if hf.size == 0 {
		w.buf = append(w.buf, schema.Header()...)
		headerEnd = len(w.buf)
	}
	for i := range rows {
		w.buf = schema.AppendCSV(w.buf, &rows[i])
		w.ends = append(w.ends, len(w.buf))
	}
	if w.paused == causeNoSpace && !w.fits(len(w.buf)) {
		w.dropped.Add(uint64(len(rows)))
		return
	}
	n, werr := hf.f.Write(w.buf)
	if werr == nil {
		hf.size += int64(n)
		w.samplesBytes.Add(uint64(n))
		w.written.Add(uint64(len(rows)))
		w.resume()
		w.syncIfDue()
		return
	}

	whole := sort.Search(len(w.ends), func(i int) bool { return w.ends[i] > n })
	keep := 0
	if whole > 0 {
		keep = w.ends[whole-1]
	} else if n >= headerEnd {
		keep = headerEnd
	}
	cause := pauseCauseOf(werr)
	// Reopened at the next tick unless the disk is merely full: a file system that went
	// read-only on an error comes back only as a new mount, which the old descriptor would
	// never see, and after an I/O error a new descriptor is the best retry there is.
	reopen := cause != causeNoSpace
	reason := werr.Error()
	if n > keep {
		if err := hf.f.Truncate(hf.size + int64(keep)); err != nil {
			// The file ends in a partial row; reopening it cuts that row, and only that.
			reopen = true
			reason = fmt.Sprintf("%v; removing the partial row it left failed too (%v), so the file is reopened", werr, err)
		}
	}
	hf.size += int64(keep)
	w.samplesBytes.Add(uint64(keep))
	w.pause(cause, logrus.Fields{fieldReason: reason})
	w.written.Add(uint64(whole))
	w.dropped.Add(uint64(len(rows) - whole))
	if reopen {
		if err := w.closeFile(); err != nil {
			w.log.WithError(err).Debug("closing the hour file after a failed write failed too")
		}
	}
}

// syncIfDue bounds what a power loss takes to FsyncEvery; without it the kernel's
// writeback decides. A failed sync may have lost rows already written, which nothing can
// bring back: it is said, and the file reopened for the next tick's rows.
func (w *Writer) syncIfDue() {
	if w.cfg.FsyncEvery <= 0 {
		return
	}
	now := w.cfg.Clock()
	if now.Sub(w.lastSync) < w.cfg.FsyncEvery {
		return
	}
	w.lastSync = now
	if err := w.file.f.Sync(); err != nil {
		w.pause(pauseCauseOf(err), logrus.Fields{fieldReason: fmt.Sprintf(
			"syncing %s: %v; rows written since the last sync may not be on disk", w.file.f.Name(), err)})
		if cerr := w.closeFile(); cerr != nil {
			w.log.WithError(cerr).Debug("closing the hour file after a failed sync failed too")
		}
	}
}

// haveSpace checks the free-space floor. It costs one statfs per tick, which is small next
// to encoding a tick's rows.
func (w *Writer) haveSpace() bool {
	if w.cfg.MinFreeBytes <= 0 {
		return true
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(w.cfg.Dir, &fs); err != nil {
		// Not knowing is no reason to stop: a write into a full disk still pauses.
		return true
	}
	free := int64(fs.Bavail) * fs.Bsize
	if free >= w.cfg.MinFreeBytes {
		return true
	}
	w.pause(causeNoSpace, logrus.Fields{fieldReason: "below the free-space floor", fieldFreeBytes: free, fieldFloor: w.cfg.MinFreeBytes})
	return false
}

// fits tells whether the file system has room for n more bytes. While the disk is full,
// a tick's rows are written only when they fit: a write that fails part way leaves a
// partial row at the end of the file until it is cut off again, and doing that at every
// tick would show readers of the live file a broken last row many times a second.
func (w *Writer) fits(n int) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(w.file.f.Fd()), &fs); err != nil {
		return true // the write says whether it fits
	}
	return int64(fs.Bavail)*fs.Bsize >= int64(n)
}
