// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/outdir"
	"github.com/threadcap/threadcap/output/schema"
)

// Hour files are named, listed and told apart by package hourfile. Each kind of file
// starts with its header (schema.KindHeader).

// hourFile is the file rows of the current hour are appended to.
type hourFile struct {
	f    *os.File
	hour time.Time
	// size is where the last complete row ends; the file is never left longer than this
	// once a write returns.
	size int64
}

// removed reports whether the file has been deleted, with or without its directory:
// rows written to it now would be lost without a word.
func (hf *hourFile) removed() bool {
	var st unix.Stat_t
	return unix.Fstat(int(hf.f.Fd()), &st) == nil && st.Nlink == 0
}

// openReport says what opening an hour file had to do, for the caller to log.
type openReport struct {
	created  bool
	cutBytes int64  // an incomplete last row removed
	setAside string // a file with another header, or not a file, moved out of the way
}

// openHourFile opens the hour's file for appending, creating it or repairing what a crash
// left. It reads a reopened file to its end: a quoted field may hold newlines, so only
// counting quotes from the start tells a row's end from a newline inside a value.
//
// Nothing in the directory is followed or trusted: a symlink, FIFO or device planted under
// an hour file's name (O_NOFOLLOW, then fstat) is moved aside like a file with another
// header, so that rows, a chmod or a chown never reach whatever it points to.
func openHourFile(dir string, hour time.Time, mode os.FileMode, gid int) (*hourFile, openReport, error) {
	return openKindFile(hourfile.Samples, dir, hour, mode, gid)
}

// openKindFile is openHourFile for the files of kind.
func openKindFile(kind hourfile.Kind, dir string, hour time.Time, mode os.FileMode, gid int) (*hourFile, openReport, error) {
	path := filepath.Join(dir, kind.Name(hour, hourfile.CSV))
	hf, err := createHourFile(dir, path, hour, mode, gid)
	if !errors.Is(err, os.ErrExist) {
		return hf, openReport{created: err == nil}, err
	}
	var rep openReport
	hf, aside, err := reopenHourFile(path, schema.KindHeader(kind), hour, &rep)
	if err != nil || aside == "" {
		return hf, rep, err
	}
	rep.setAside = filepath.Join(dir, kind.Name(hour, aside))
	if err := os.Rename(path, rep.setAside); err != nil {
		return nil, rep, fmt.Errorf("moving aside %s: %w; remove it", path, err)
	}
	hf, err = createHourFile(dir, path, hour, mode, gid)
	return hf, openReport{created: err == nil, setAside: rep.setAside}, err
}

// createHourFile creates a new hour file; the error wraps os.ErrExist if there is one.
func createHourFile(dir, path string, hour time.Time, mode os.FileMode, gid int) (*hourFile, error) {
	// O_EXCL never follows a symlink either.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if err := outdir.SetOwnership(f, mode, gid); err != nil {
		f.Close()
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if err := outdir.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &hourFile{f: f, hour: hour}, nil
}

// reopenHourFile opens an existing hour file and cuts an incomplete last row, noting it in
// rep. It returns the suffix to move the file aside to, and no file, when the file is not
// one of ours.
func reopenHourFile(path, header string, hour time.Time, rep *openReport) (*hourFile, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, hourfile.NotAFile, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("opening %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, hourfile.NotAFile, nil
	}
	size, end, known, err := completeRows(f, header)
	switch {
	case err != nil:
		f.Close()
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	case !known:
		f.Close()
		return nil, hourfile.OtherSchema, nil
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, "", fmt.Errorf("cutting the incomplete last row of %s: %w", path, err)
		}
		rep.cutBytes = size - end
	}
	return &hourFile{f: f, hour: hour, size: end}, "", nil
}

// completeRows finds where the last complete row of an hour file ends. known is false when
// the file starts with a header other than ours. A NUL byte ends the scan, as a power loss
// can leave a zero-filled tail and schema.AppendCSV never writes NUL.
func completeRows(f *os.File, header string) (size, end int64, known bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, false, err
	}
	size = fi.Size()
	r := io.NewSectionReader(f, 0, size)
	head := make([]byte, len(header))
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return size, 0, false, err
	}
	if n < len(head) {
		// A header cut short is ours if it is a prefix of ours; nothing after it survives.
		return size, 0, bytes.HasPrefix([]byte(header), head[:n]), nil
	}
	if string(head) != header {
		return size, 0, false, nil
	}
	end = int64(len(header))
	pos, quoted := end, false
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		for i, c := range buf[:n] {
			switch {
			case c == '"':
				quoted = !quoted
			case c == '\n' && !quoted:
				end = pos + int64(i) + 1
			case c == 0:
				return size, end, true, nil
			}
		}
		pos += int64(n)
		if errors.Is(err, io.EOF) {
			return size, end, true, nil
		}
		if err != nil {
			return size, end, true, err
		}
	}
}
