// SPDX-License-Identifier: Apache-2.0

package output

import (
	"errors"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// pauseCause is a condition an administrator fixes while threadcap keeps running: rows are
// dropped and counted until it clears, and both ends are logged once.
// name is the cause as Stats gives it.
type pauseCause struct{ name, stop, resume string }

var (
	causeNoSpace = &pauseCause{
		name:   PausedNoSpace,
		stop:   "out of disk space: dropping rows until space is freed",
		resume: "disk space is back: writing rows again",
	}
	causeReadOnly = &pauseCause{
		name:   PausedReadOnly,
		stop:   "output file system is read-only: dropping rows until it is writable; check dmesg for why it went read-only",
		resume: "output file system is writable again: writing rows again",
	}
	causeWriteError = &pauseCause{
		name:   PausedWriteError,
		stop:   "cannot write the hour file: rows that cannot be written are dropped, and it is tried again at every tick; the reason says what to fix",
		resume: "the hour file can be written again: writing rows again",
	}
)

// pauseCauseOf is the pause err calls for. Whatever keeps the hour file from being
// written, threadcap keeps sampling, says so once and tries again at every tick: exiting
// would not fix the disk, and a restart loop would end with systemd giving up on it.
func pauseCauseOf(err error) *pauseCause {
	switch {
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT):
		return causeNoSpace
	case errors.Is(err, unix.EROFS):
		return causeReadOnly
	}
	return causeWriteError
}

// pause logs the first tick that cannot write; the ticks after it only count their rows.
// It is called before the dropped rows of that tick are counted, so that they are part of
// the total logged on resume. A pause for a plain write error that turns out to have a
// cause of its own is said once more, by that cause: ext4 failing with errors=remount-ro
// fails the sync with EIO first, and every write after it with EROFS. So at most two
// lines a pause, and the resume is the cause's.
func (w *Writer) pause(cause *pauseCause, fields logrus.Fields) {
	switch {
	case w.paused == nil:
		w.pausedAt = w.dropped.Load()
	case w.paused == causeWriteError && cause != causeWriteError:
		// The plain write error turned out to be this cause: said once more, by name.
	default:
		return // logged already; its resume covers this one
	}
	w.paused = cause
	w.pausedNow.Store(cause)
	w.log.WithFields(fields).Warn(cause.stop)
	// Compressing a finished hour may be what frees the space.
	w.kickMaintenance()
}

func (w *Writer) resume() {
	if w.paused == nil {
		return
	}
	w.log.WithField(fieldDropped, w.dropped.Load()-w.pausedAt).Info(w.paused.resume)
	w.paused = nil
	w.pausedNow.Store(nil)
}
