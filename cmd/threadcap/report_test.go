// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output/report"
)

var reportNow = time.Date(2026, 11, 21, 10, 40, 0, 0, time.UTC)

func TestParseReportFlags(t *testing.T) {
	got, err := parseReportFlags([]string{"--dir", "/srv/tc", "--from", "03:10", "--to", "2026-11-21 03:15",
		"--by", "process,state", "--where", "process=mysqld", "--where", "state=on_cpu", "--top", "5",
		"--format", "json"}, reportNow, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := reportConfig{Dir: "/srv/tc", Format: report.FormatJSON, Query: report.Query{
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
// hour files (threadcap run's default), else from the service's directory.
func TestReportDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	got, err := parseReportFlags(nil, reportNow, io.Discard)
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
	if got, err := parseReportFlags(nil, reportNow, io.Discard); err != nil || got.Dir != localDataDir {
		t.Errorf("with hour files in ./data: dir %q, %v; want %q", got.Dir, err, localDataDir)
	}
}

// TestReportMistakes: every mistake is reported at once, as a usage error.
func TestReportMistakes(t *testing.T) {
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
}
