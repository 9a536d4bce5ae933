// SPDX-License-Identifier: Apache-2.0

package output

import (
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
)

// writeTick adds tick to the hour's ticks file, after its first batch of rows, once
// however many batches follow. A tick whose rows were dropped (the disk is full, or the
// hour file cannot be written) is left out with them, so that averages over the ticks
// that remain stay right.
func (w *Writer) writeTick(tick time.Time) {
	if tick.Equal(w.lastTick) || w.paused != nil {
		return
	}
	w.lastTick = tick
	if !w.ticks.current(w.file.hour) {
		if err := w.ticks.open(w, w.file.hour); err != nil {
			w.ticksFailed(err)
			return
		}
	}
	line := append(tick.Local().AppendFormat(nil, hourfile.TimeLayout), '\n')
	if err := w.ticks.appendLines(line); err != nil {
		w.ticksFailed(err)
	}
}

func (w *Writer) ticksFailed(err error) {
	w.ticks.fail(w, err, "writing the ticks file failed; reports over this hour count only the ticks that had rows")
}
