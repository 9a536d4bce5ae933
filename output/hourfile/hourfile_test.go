// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestHourNames(t *testing.T) {
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		hour time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC), "threadcap_samples_2026-11-21T14Z.csv"},
		{time.Date(2026, 11, 1, 1, 30, 0, 0, newYork), "threadcap_samples_2026-11-01T05Z.csv"},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("UTC+14", 14*3600)), "threadcap_samples_2025-12-31T10Z.csv"},
	}
	for _, tt := range tests {
		got := Samples.Name(tt.hour.Truncate(time.Hour), CSV)
		if got != tt.want {
			t.Errorf("Samples.Name(%v) = %s, want %s", tt.hour, got, tt.want)
		}
		n, ok := Parse(got)
		if !ok || n.Kind != Samples || n.Suffix != CSV || !n.Hour.Equal(tt.hour.Truncate(time.Hour)) {
			t.Errorf("Parse(%s) = %v, %v", got, n, ok)
		}
	}
	for _, name := range []string{"threadcap_samples_2026-11-21T14.csv", "other_2026-11-21T14Z.csv", "threadcap_samples_"} {
		if _, ok := Parse(name); ok {
			t.Errorf("Parse(%s) accepted a name threadcap does not write", name)
		}
	}
}

func TestKinds(t *testing.T) {
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	for k, want := range map[Kind]string{Samples: "threadcap_samples_", Stacks: "threadcap_stacks_", Ticks: "threadcap_ticks_"} {
		if k.Prefix() != want {
			t.Errorf("kind prefix %q, want %q", k.Prefix(), want)
		}
		if n, ok := Parse(k.Name(hour, Gzip)); !ok || n.Kind != k || !n.Readable() {
			t.Errorf("Parse(%s) = %v, %v", k.Name(hour, Gzip), n, ok)
		}
	}
	for _, suffix := range []string{Gzip + Tmp, OtherSchema, NotAFile} {
		if n, ok := Parse(Stacks.Name(hour, suffix)); !ok || n.Readable() {
			t.Errorf("Parse(%s) = %v, %v: want a name threadcap wrote that readers skip", Stacks.Name(hour, suffix), n, ok)
		}
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	h1 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	h0 := h1.Add(-time.Hour)
	names := []string{Ticks.Name(h1, CSV), Samples.Name(h1, CSV), Samples.Name(h0, Gzip), Stacks.Name(h0, Zstd+Tmp), "notes.txt"}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(names[1], filepath.Join(dir, Samples.Name(h0, CSV))); err != nil {
		t.Fatal(err)
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		if f.Path != filepath.Join(dir, f.String()) {
			t.Errorf("%s listed as %s", f.Path, f.String())
		}
		got = append(got, f.String())
	}
	// Oldest hour first, by name within an hour; neither the symlink nor notes.txt.
	want := []string{Samples.Name(h0, Gzip), Stacks.Name(h0, Zstd+Tmp), Samples.Name(h1, CSV), Ticks.Name(h1, CSV)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if _, err := List(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("List of a missing directory: %v", err)
	}
}

// FuzzParseHourName checks that a name is taken as threadcap's only if threadcap would
// write exactly that name, so that retention never deletes a file it did not write, and
// that its hour is a UTC hour.
func FuzzParseHourName(f *testing.F) {
	for _, seed := range []string{"threadcap_samples_2026-11-21T14Z.csv", "threadcap_samples_2026-11-21T14Z.csv.gz",
		"threadcap_samples_2026-11-21T14Z.csv.zst", "threadcap_samples_2026-11-21T14Z.csv.gz.tmp",
		"threadcap_samples_2026-11-21T14Z.csv.other-schema", "threadcap_samples_2026-11-21T24Z.csv",
		"threadcap_samples_2026-02-30T24Z.csv", "threadcap_samples_+2026-11-21T4Z.csv",
		"threadcap_stacks_2026-11-21T14Z.csv", "threadcap_ticks_2026-11-21T14Z.csv.zst", "notes.txt"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := Parse(name)
		if !ok {
			return
		}
		if back := n.String(); back != name {
			t.Fatalf("%q parsed as %v %q, which names %q", name, n.Hour, n.Suffix, back)
		}
		if n.Hour.Location() != time.UTC || !n.Hour.Equal(n.Hour.Truncate(time.Hour)) {
			t.Fatalf("%q parsed as %v, not a UTC hour", name, n.Hour)
		}
	})
}

func TestParquetLayout(t *testing.T) {
	hour := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	got := Samples.ParquetPath(hour.In(time.FixedZone("CET", 3600)), "db-7.example")
	if want := "parquet/kind=samples/date=2026-11-24/hour=03/db-7.example.parquet"; got != want {
		t.Errorf("ParquetPath = %s, want %s", got, want)
	}
	for _, suffix := range []string{Parquet, Parquet + Tmp} {
		n, ok := Parse(got + suffix[len(Parquet):])
		if !ok || n.Kind != Samples || !n.Hour.Equal(hour) || n.Host != "db-7.example" || n.Suffix != suffix || n.Readable() {
			t.Errorf("Parse(%s) = %+v, %v", got, n, ok)
		}
		if n.String() != got+suffix[len(Parquet):] {
			t.Errorf("String() = %s", n.String())
		}
	}
	for _, bad := range []string{
		"parquet/kind=samples/date=2026-11-24/hour=03/.hidden.parquet",
		"parquet/kind=other/date=2026-11-24/hour=03/h.parquet",
		"parquet/kind=samples/date=2026-11-24/hour=3/h.parquet",
		"parquet/kind=samples/date=2026-11-24/hour=03/h.csv",
		"parquet/kind=samples/hour=03/h.parquet",
	} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%s) accepted a path threadcap does not write", bad)
		}
	}
	dir := t.TempDir()
	for _, p := range []string{got, Ticks.ParquetPath(hour.Add(-time.Hour), "h2"), "parquet/kind=samples/notes.txt"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Host != "h2" || files[1].Path != filepath.Join(dir, got) {
		t.Errorf("List = %+v", files)
	}
	RemoveEmptyParquetDirs(dir, filepath.Join(dir, got)) // not empty: kept
	os.Remove(filepath.Join(dir, got))
	RemoveEmptyParquetDirs(dir, filepath.Join(dir, got))
	if _, err := os.Stat(filepath.Join(dir, "parquet/kind=samples/date=2026-11-24")); !os.IsNotExist(err) {
		t.Errorf("empty partitions left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "parquet/kind=samples/notes.txt")); err != nil {
		t.Errorf("a file threadcap did not write: %v", err)
	}
}

func TestCheckHost(t *testing.T) {
	for host, ok := range map[string]bool{"db-7.example": true, "h_1": true, "": false, ".x": false, "a/b": false, "a b": false, "ü": false} {
		if err := CheckHost(host); (err == nil) != ok {
			t.Errorf("CheckHost(%q) = %v", host, err)
		}
	}
}
