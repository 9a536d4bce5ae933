// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadcap/threadcap/configs/config"

	"github.com/threadcap/threadcap/output/report"
)

var reportNow = time.Date(2026, 11, 21, 10, 40, 0, 0, time.UTC)

func TestParseReportFlags(t *testing.T) {
	got, err := parseReportFlags([]string{"--config", "", "--dir", "/srv/tc", "--from", "03:10", "--to", "2026-11-21 03:15",
		"--by", "process,state", "--where", "process=mysqld", "--where", "state=on_cpu", "--top", "5",
		"--format", "json"}, reportNow, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := reportConfig{Dir: "/srv/tc", Format: report.FormatJSON, Readers: readers{}, Query: report.Query{
		Window: report.Window{From: time.Date(2026, 11, 21, 3, 10, 0, 0, time.UTC), To: time.Date(2026, 11, 21, 3, 15, 0, 0, time.UTC)},
		By:     []string{"process", "state"},
		Where:  []report.Match{{Column: "process", Value: "mysqld"}, {Column: "state", Value: "on_cpu"}},
		Top:    5,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestReportDefaults: the last 15 minutes by state and syscall, from ./data when it holds
// hour files (threadcap run's default), else from the service's directory. (No config
// file: this machine's own must not decide the test.)
func TestReportDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	noConfig := []string{"--config", ""}
	got, err := parseReportFlags(noConfig, reportNow, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := reportConfig{Dir: serviceDataDir, Format: report.FormatTable, Query: report.Query{
		Window: report.Window{From: reportNow.Add(-15 * time.Minute), To: reportNow},
		By:     []string{"state", "syscall"}, Top: 20,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if err := os.Mkdir("data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("data", "threadcap_samples_2026-11-21T10Z.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := parseReportFlags(noConfig, reportNow, io.Discard); err != nil || got.Dir != localDataDir {
		t.Errorf("with hour files in ./data: dir %q, %v; want %q", got.Dir, err, localDataDir)
	}
}

// TestReportMistakes: every mistake is reported at once, as a usage error.
func TestReportMistakes(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := parseReportFlags([]string{"--last", "5m", "--from", "03:10", "--timeline", "hour", "--format", "xml"}, reportNow, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--last cannot be combined", `--timeline "hour"`, `--format "xml"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, err = parseReportFlags([]string{"--by", "proces", "--where", "nope"}, reportNow, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--where "nope"`) {
		t.Errorf("error %v, want one about --where", err)
	}
	if _, err = parseReportFlags([]string{"--by", "proces"}, reportNow, io.Discard); err == nil || !strings.Contains(err.Error(), `no column "proces"`) {
		t.Errorf("error %v, want one naming the unknown column", err)
	}
	if _, err = parseReportFlags([]string{"--profile"}, reportNow, io.Discard); err == nil || !strings.Contains(err.Error(), "--folded --profile") {
		t.Errorf("--profile alone: error %v, want one saying it goes with --folded", err)
	}
}

// TestReportReadsTheConfigDir: report looks where run writes, the config file's dir, unless
// --dir says otherwise; the file's output.group is the group named when the files cannot be
// read.
func TestReportReadsTheConfigDir(t *testing.T) {
	t.Chdir(t.TempDir())
	config := filepath.Join(t.TempDir(), "threadcap.yaml")
	if err := os.WriteFile(config, []byte("dir: /srv/threadcap\noutput:\n  group: \"0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseReportFlags([]string{"--config", config}, reportNow, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (readers{ConfigPath: config, Group: "0"}); got.Dir != "/srv/threadcap" || got.Readers != want {
		t.Errorf("with the config's dir: dir %q, readers %+v; want /srv/threadcap, %+v", got.Dir, got.Readers, want)
	}
	got, err = parseReportFlags([]string{"--config", config, "--dir", "/tmp/elsewhere"}, reportNow, io.Discard)
	if err != nil || got.Dir != "/tmp/elsewhere" {
		t.Errorf("--dir over the config's dir: dir %q, %v; want /tmp/elsewhere", got.Dir, err)
	}
	// A file without dir leaves report's own default.
	if err := os.WriteFile(config, []byte("hz: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := parseReportFlags([]string{"--config", config}, reportNow, io.Discard); err != nil || got.Dir != serviceDataDir {
		t.Errorf("a config without dir: dir %q, %v; want %s", got.Dir, err, serviceDataDir)
	}
	// Its mistakes are run's mistakes, named by file and line.
	if err := os.WriteFile(config, []byte("dri: /srv/threadcap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseReportFlags([]string{"--config", config}, reportNow, io.Discard); err == nil ||
		!strings.Contains(err.Error(), config+":1: dri: unknown key") {
		t.Errorf("a config with a misspelt key: %v, want the mistake named", err)
	}
	if _, err := parseReportFlags([]string{"--config", filepath.Join(t.TempDir(), "absent.yaml")}, reportNow, io.Discard); err == nil {
		t.Error("a --config file that does not exist is not an error")
	}
}

// permissionDenied is the error listing a directory this user may not read gives, as
// report.Run wraps it.
func permissionDenied(dir string) error {
	return fmt.Errorf("listing hour files: %w", &fs.PathError{Op: "open", Path: dir, Err: syscall.EACCES})
}

// TestPermissionProblemSaysHowToRead: a user who may not read the files is told so, and
// how to become one who may, not sent looking for another directory.
func TestPermissionProblemSaysHowToRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readers readers
		want    []string
	}{
		{"group set", readers{ConfigPath: "/etc/threadcap/threadcap.yaml", Group: "threadcap-readers"},
			[]string{"permission denied", "/var/lib/threadcap", "group threadcap-readers", "output.group in /etc/threadcap/threadcap.yaml",
				"usermod -aG threadcap-readers", "--dir"}},
		{"no group", readers{ConfigPath: "/srv/tc.yaml"},
			[]string{"permission denied", "set output.group in /srv/tc.yaml", "add the user to that group", "--dir"}},
		{"no config file", readers{}, []string{"set output.group in " + config.DefaultPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.readers.explain(permissionDenied("/var/lib/threadcap"))
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not say %q", err, want)
				}
			}
			if !errors.Is(err, fs.ErrPermission) {
				t.Errorf("%v is no longer a permission error", err)
			}
		})
	}
	// Any other error is left as it is: it is not about who may read.
	missing := fmt.Errorf("listing hour files: %w", &fs.PathError{Op: "open", Path: "/srv/x", Err: syscall.ENOENT})
	if got := (readers{Group: "adm"}).explain(missing); got != missing {
		t.Errorf("a missing directory explained as %q", got)
	}
}

// TestUnreadableDirectory reads a directory of mode 000 for real, on a thread without the
// capabilities that let root read it anyway: the report says permission denied and how to
// fix it, and a ./data that cannot be read is the one named, not the service's directory.
func TestUnreadableDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("data", "threadcap_samples_2026-11-21T10Z.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod("data", 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod("data", 0o755) })
	var cfg reportConfig
	var runErr error
	withoutFileCapabilities(t, func() {
		var err error
		cfg, err = parseReportFlags([]string{"--config", ""}, reportNow, io.Discard)
		if err != nil {
			t.Error(err)
			return
		}
		runErr = runReport(cfg, io.Discard)
	})
	if cfg.Dir != localDataDir {
		t.Errorf("dir %q, want the unreadable %s", cfg.Dir, localDataDir)
	}
	if runErr == nil || !errors.Is(runErr, fs.ErrPermission) || !strings.Contains(runErr.Error(), "set output.group") ||
		strings.Contains(runErr.Error(), "no such file") {
		t.Errorf("report of an unreadable directory: %v, want permission denied and how to read it", runErr)
	}
}

// withoutFileCapabilities runs fn on a thread of its own whose effective capabilities are
// cleared, so that root, too, is refused what the file modes refuse. Capabilities belong
// to a thread: the thread is locked to fn's goroutine and ends with it, and no other
// goroutine ever runs on it.
func withoutFileCapabilities(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("dropping capabilities: %v", err)
	}
}
