// SPDX-License-Identifier: Apache-2.0

package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
	"github.com/threadcap/threadcap/test/privileged"
)

// TestCrashLeftoversAreRepaired starts from files as a crash can leave them and checks that
// a restart keeps every complete row, drops the cut one, and leaves a file that parses.
func TestCrashLeftoversAreRepaired(t *testing.T) {
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	complete := []state.Sample{mysqlRow(hour, 1), mysqlRow(hour, 2)}
	complete[1].Exe = "/opt/a\nb/c" // a newline inside a value is not the end of a row
	cut := mysqlRow(hour, 3)
	cut.Exe = "/opt/x\ny/z"
	var good []byte
	good = append(good, schema.Header()...)
	for i := range complete {
		good = schema.AppendCSV(good, &complete[i])
	}
	cutRow := schema.AppendCSV(nil, &cut)
	newline := bytes.IndexByte(cutRow, '\n')

	tests := []struct {
		name    string
		content []byte
		keep    []byte // what survives before the new rows
		cut     bool   // whether a repair is logged
	}{
		{"clean file", good, good, false},
		{"row cut mid-field", append(bytes.Clone(good), cutRow[:20]...), good, true},
		{"row cut after a newline inside quotes", append(bytes.Clone(good), cutRow[:newline+1]...), good, true},
		{"row cut before its newline", append(bytes.Clone(good), cutRow[:len(cutRow)-1]...), good, true},
		{"zero-filled tail after power loss", append(bytes.Clone(good), make([]byte, 4096)...), good, true},
		{"header cut short", []byte(schema.Header()[:10]), []byte(schema.Header()), true},
		{"empty file", nil, []byte(schema.Header()), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv")
			if err := os.WriteFile(path, tt.content, 0o640); err != nil {
				t.Fatal(err)
			}
			cfg, _, hook := testConfig(dir, hour)
			w := newWriter(t, cfg)
			next := mysqlRow(hour.Add(time.Minute), 4)
			if err := w.Write(next.Time, []state.Sample{next}); err != nil {
				t.Fatal(err)
			}
			closeWriter(t, w)
			want := schema.AppendCSV(bytes.Clone(tt.keep), &next)
			if got := readPlain(t, path); !bytes.Equal(got, want) {
				t.Errorf("file after restart:\n%q\nwant:\n%q", got, want)
			}
			readCSV(t, path)
			logged := countLogs(hook, logrus.WarnLevel, "removed the incomplete last row an earlier run left") == 1
			if logged != tt.cut {
				t.Errorf("repair logged: %v, want %v", logged, tt.cut)
			}
		})
	}
}

func TestFileWithAnotherHeaderIsSetAside(t *testing.T) {
	dir := t.TempDir()
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	old := "sample_time,pid\n2026-11-21T09:00:00.000000-05:00,1\n"
	path := filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv")
	if err := os.WriteFile(path, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := testConfig(dir, hour)
	w := newWriter(t, cfg)
	if err := w.Write(hour, mysqlRows(hour, 1, 1)); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	aside := filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv.other-schema")
	if got, err := os.ReadFile(aside); err != nil || string(got) != old {
		t.Errorf("old file not kept as %s: %q, %v", aside, got, err)
	}
	if n := len(readCSV(t, path)); n != 2 {
		t.Errorf("new file has %d lines, want header and 1 row", n)
	}
}

func TestNewFilesGetModeAndGroup(t *testing.T) {
	privileged.Require(t)
	// A strict umask must not narrow the modes a DBA group relies on.
	defer unix.Umask(unix.Umask(0o077))
	dir := filepath.Join(t.TempDir(), "out")
	cfg, _, _ := testConfig(dir, tick)
	cfg.Group = "4321"
	w := newWriter(t, cfg)
	if err := w.Write(tick, mysqlRows(tick, 1, 1)); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	for path, mode := range map[string]os.FileMode{dir: 0o750 | os.ModeDir, filepath.Join(dir, hourfile.Samples.Name(tick.Truncate(time.Hour), hourfile.CSV)): 0o640} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		gid := fi.Sys().(*syscall.Stat_t).Gid
		if fi.Mode() != mode || gid != 4321 {
			t.Errorf("%s has mode %v and gid %d, want %v and 4321", path, fi.Mode(), gid, mode)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // every problem must be reported
	}{
		{"defaults with a dir are fine", Config{Dir: "/var/lib/threadcap"}, nil},
		{"everything set is fine", Config{Dir: "d", FileMode: 0o600, DirMode: 0o700, Group: "0",
			Compress: CompressZstd, MaxAge: time.Hour, MaxBytes: 1, MinFreeBytes: 1, FsyncEvery: time.Second}, nil},
		{"all mistakes at once", Config{FileMode: 0o044, DirMode: os.ModeSetuid | 0o755, Group: "no-such-group-xyz",
			Compress: "lz4", MaxAge: -1, MaxBytes: -1, MinFreeBytes: -1, FsyncEvery: -1}, []string{
			"output dir is not set", "file mode 044 must give the owner at least 0600",
			"dir mode", "has bits other than permissions", `group "no-such-group-xyz"`,
			`compress "lz4" is not one of gzip, zstd, none`, "max age is negative",
			"max bytes is negative", "min free bytes is negative", "fsync every is negative",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, missing %q", err, w)
				}
			}
		})
	}
}
