// SPDX-License-Identifier: Apache-2.0

// Package retention deletes the closed hours of the output dir that are past the
// configured age, or beyond the configured total size, oldest first, except those held
// (Parquet hours not shipped yet).
package retention

import (
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/threadcap/threadcap/output/hourfile"
)

// Log field keys, as the Writer's.
const (
	fieldFile   = "file"
	fieldReason = "reason"
	fieldHeld   = "held"
)

// Policy is what retention keeps.
type Policy struct {
	// MaxAge deletes an hour file once its last possible row is older than this; 0 keeps
	// files forever.
	MaxAge time.Duration
	// MaxBytes deletes the oldest hour files while all of them together take more than
	// this; 0 means no limit.
	MaxBytes int64
	// Hold, when set, keeps the hour files it holds.
	Hold func(hourfile.File) bool
}

// Hour is one of threadcap's files in the directory, with its size.
type Hour struct {
	hourfile.File
	Size int64
}

// Apply deletes the closed hours (those before current) of hours, listed oldest first,
// past MaxAge at now, then the oldest closed hours while all files together exceed
// MaxBytes, but none that p.Hold holds. Failures are logged; the next pass tries again.
func Apply(log *logrus.Entry, dir string, hours []Hour, current, now time.Time, p Policy) {
	var total int64
	for _, h := range hours {
		if !strings.HasSuffix(h.Suffix, hourfile.Tmp) {
			total += h.Size
		}
	}
	cutoff := now.Add(-p.MaxAge)
	var held int
	defer func() {
		if held > 0 {
			log.WithField(fieldHeld, held).Info("kept hour files past retention until they are shipped")
		}
	}()
	for _, h := range hours {
		if !h.Hour.Before(current) || strings.HasSuffix(h.Suffix, hourfile.Tmp) {
			continue
		}
		var reason string
		switch {
		case p.MaxAge > 0 && !h.Hour.Add(time.Hour).After(cutoff):
			reason = "older than max age"
		case p.MaxBytes > 0 && total > p.MaxBytes:
			reason = "files exceed max bytes"
		default:
			continue
		}
		if p.Hold != nil && p.Hold(h.File) {
			held++
			continue
		}
		path := h.Path
		if err := os.Remove(path); err != nil {
			log.WithField(fieldFile, path).WithError(err).Error("deleting old hour file failed")
			continue
		}
		if h.Host != "" {
			hourfile.RemoveEmptyParquetDirs(dir, path)
		}
		total -= h.Size
		log.WithField(fieldFile, path).WithField(fieldReason, reason).Info("deleted old hour file")
	}
}
