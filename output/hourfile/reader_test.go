// SPDX-License-Identifier: Apache-2.0

package hourfile_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/threadcap/threadcap/output/hourfile"
	"github.com/threadcap/threadcap/output/parquet"
	"github.com/threadcap/threadcap/output/schema"
	"github.com/threadcap/threadcap/state"
)

// sampleCSV is a samples file of rows whose text is hostile in every way AppendText
// handles: formula guards, quotes, commas, line breaks, control characters, spaces.
func sampleCSV(t *testing.T) []byte {
	t.Helper()
	at := time.Date(2026, 11, 21, 14, 3, 7, 123456000, time.UTC)
	buf := []byte(schema.Header())
	names := []string{"postgres", "=cmd()", "-bash", "'quoted", "a,b", `say "hi"`, "two\nlines", " padded ", "\x1b[31mred", "@x"}
	for i, name := range names {
		s := state.Sample{
			Time: at.Add(time.Duration(i/3) * time.Second), Pid: int32(100 + i), Tid: int32(200 + i),
			Process: name, Thread: name, User: "u" + name, State: state.State(i % 5), StateUs: int64(i) * 1000,
			Syscall: "read", SyscallUs: state.Unknown, SyscallCPUUs: 7, CPU: int32(i % 2),
			StateTimeUs: [state.TimedStates]int64{int64(i), 2, 3, 4, 5}, Seeded: i%4 == 0,
			Exe: "/usr/bin/" + name, Cmdline: name + " --flag", Span: "query", SpanUs: 12, SpanArg: "SELECT '" + name + "'",
		}
		buf = schema.AppendCSV(buf, &s)
	}
	return buf
}

// writeFormats writes csv as a samples hour in every format threadcap writes, and returns
// their paths.
func writeFormats(t testing.TB, csv []byte) map[string]string {
	t.Helper()
	dir := t.TempDir()
	hour := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	paths := map[string]string{}
	for _, suffix := range []string{hourfile.CSV, hourfile.Gzip, hourfile.Zstd} {
		path := filepath.Join(dir, hourfile.Samples.Name(hour, suffix))
		if err := os.WriteFile(path, compress(t, suffix, csv), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[suffix] = path
	}
	var pq bytes.Buffer
	if _, err := parquet.Write(&pq, bytes.NewReader(csv), hourfile.Samples, "db-7"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(hourfile.Samples.ParquetPath(hour, "db-7")))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pq.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	paths[hourfile.Parquet] = path
	return paths
}

func compress(t testing.TB, suffix string, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch suffix {
	case hourfile.Gzip:
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case hourfile.Zstd:
		zw, err := zstd.NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		return b
	}
	return out.Bytes()
}

// readFile reads every row of path, each as its fields joined by |, with the header first.
func readFile(t *testing.T, path string) (rows []string, lost int64, tail error) {
	t.Helper()
	r, err := hourfile.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows = append(rows, string(bytes.Join(r.Header(), []byte("|"))))
	for {
		fields, ok := r.Next()
		if !ok {
			return rows, r.Lost(), r.Tail()
		}
		rows = append(rows, string(bytes.Join(fields, []byte("|"))))
	}
}

// TestReaderReadsEveryFormatAlike: a Parquet hour reads as the CSV it was converted from,
// field for field (text guarded, times in local time, NULL empty, host left out), and the
// compressed CSVs as the plain one.
func TestReaderReadsEveryFormatAlike(t *testing.T) {
	csv := sampleCSV(t)
	paths := writeFormats(t, csv)
	want, lost, tail := readFile(t, paths[hourfile.CSV])
	if lost != 0 || tail != nil || len(want) != 11 {
		t.Fatalf("the plain CSV: %d rows, %d lost, tail %v; want the header and 10 rows", len(want), lost, tail)
	}
	for _, suffix := range []string{hourfile.Gzip, hourfile.Zstd, hourfile.Parquet} {
		got, lost, tail := readFile(t, paths[suffix])
		if lost != 0 || tail != nil {
			t.Errorf("%s: %d lost, tail %v", suffix, lost, tail)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("%s: row %d\n got %q\nwant %q", suffix, i, got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d rows, want %d", suffix, len(got), len(want))
			}
		}
	}
}

// TestReaderLosesOnlyTheDamage: in every CSV format a damaged line costs that line, read
// going on at the next; a compressed file cut short gives the rows before the cut and says
// why the rest is not there; a file that cannot be opened is an error naming it.
func TestReaderLosesOnlyTheDamage(t *testing.T) {
	csv := sampleCSV(t)
	lines := strings.SplitAfter(string(csv), "\n")
	for _, damage := range []string{"garbage,\"unterminated\n", "1,2,3\n", "\"x\"y\n", "2026-11-21T14:03:07.000000+00:00,\"\n"} {
		// After the second row: the rows around it, one with a line break, must survive.
		damaged := strings.Join(lines[:3], "") + damage + strings.Join(lines[3:], "")
		paths := writeFormats(t, csv)
		dpaths := map[string]string{}
		for _, suffix := range []string{hourfile.CSV, hourfile.Gzip, hourfile.Zstd} {
			dpaths[suffix] = paths[suffix] + ".damaged" + suffix
			if err := os.WriteFile(dpaths[suffix], compress(t, suffix, []byte(damaged)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, _, _ := readFile(t, paths[hourfile.CSV])
		for suffix, path := range dpaths {
			got, lost, tail := readFile(t, path)
			if !reflect.DeepEqual(got, want) || lost != 1 || tail != nil {
				t.Errorf("%q in %s: %d rows (want %d), %d lost (want 1), tail %v", damage, suffix, len(got), len(want), lost, tail)
			}
		}
	}

	// Cut short: about two thirds of each compressed file.
	// Rows that compress to many blocks, so that a cut leaves whole ones before it.
	long := []byte(schema.Header())
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		s := state.Sample{Time: time.Unix(1_800_000_000+int64(i/100), 0), Pid: rnd.Int32(), Tid: rnd.Int32(),
			Process: strconv.FormatUint(rnd.Uint64(), 36), Cmdline: strconv.FormatUint(rnd.Uint64(), 36)}
		long = schema.AppendCSV(long, &s)
	}
	paths := writeFormats(t, long)
	for _, suffix := range []string{hourfile.Gzip, hourfile.Zstd} {
		whole, _ := os.ReadFile(paths[suffix])
		if err := os.WriteFile(paths[suffix], append([]byte{}, whole[:len(whole)*2/3]...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full, _, _ := readFile(t, paths[hourfile.CSV])
	for _, suffix := range []string{hourfile.Gzip, hourfile.Zstd} {
		got, _, tail := readFile(t, paths[suffix])
		if tail == nil || len(got) < 2 || len(got) >= len(full) || !reflect.DeepEqual(got, full[:len(got)]) {
			t.Errorf("%s cut short: %d rows of %d, tail %v; want the rows before the cut, as written, and why the rest is not there",
				suffix, len(got), len(full), tail)
		}
	}

	dir := t.TempDir()
	notGzip := filepath.Join(dir, "threadcap_samples_2026-11-21T14Z.csv.gz")
	notParquet := filepath.Join(dir, "db-7.parquet")
	for path, content := range map[string][]byte{notGzip: []byte("plain text\n"), notParquet: []byte("PAR1 cut short")} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{notGzip, notParquet, filepath.Join(dir, "gone.csv")} {
		if _, err := hourfile.OpenReader(path); err == nil || !strings.Contains(err.Error(), filepath.Base(path)) {
			t.Errorf("%s: error %v, want one naming the file", filepath.Base(path), err)
		}
	}
}

// FuzzReaderDamagedLine: whatever one damaged line holds, put between rows written as the
// writer writes them, every row is read, as written, and the damaged line counts as at
// most one lost record (or reads as one row, when it happens to be one). That holds when
// no row's text holds a newline. When one does, a quote the damaged line leaves open can
// close on a following row's line into a record that parses and has the header's fields
// (`,"` then `",` reads as three fields), and the rows after it can go on pairing up the
// wrong lines: no reader can tell those records from rows by their syntax (the fuzzer
// found both). Then only the rows before the damage, and reading on to the end, are held.
func FuzzReaderDamagedLine(f *testing.F) {
	for _, seed := range [][2]string{
		{"garbage,\"unterminated", "two\nlines"}, {"\"", "a,b"}, {"x,\"y", `say "hi"`}, {"\"a\"b", "=1"},
		{",,,", "\"quoted\""}, {"\x00\xff", " padded "}, {"a,\"b\nc", "x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, damage, text string) {
		damage = strings.ReplaceAll(damage, "\n", "") + "\n"
		var rows [][]byte
		for i := range 6 {
			var b []byte
			b = hourfile.AppendText(b, text+strings.Repeat("x", i))
			b = append(append(b, ','), byte('0'+i))
			b = hourfile.AppendText(append(b, ','), text)
			rows = append(rows, append(b, '\n'))
		}
		clean := "a,b,c\n" + string(bytes.Join(rows, nil))
		in := "a,b,c\n" + string(bytes.Join(rows[:3], nil)) + damage + string(bytes.Join(rows[3:], nil))
		want, _, _ := readAll(t, clean)
		got, lost, tail := readAll(t, in)
		if len(want) != 6 {
			t.Fatalf("%q: %d rows without damage, want 6", clean, len(want))
		}
		if strings.Contains(text, "\n") {
			if len(got) < 3 || !reflect.DeepEqual(got[:3], want[:3]) || tail != nil {
				t.Fatalf("%q:\n got %q, %d lost, tail %v\nwant %q first", in, got, lost, tail, want[:3])
			}
			return
		}
		// The damaged line may read as a row of its own, between the third and fourth.
		if len(got) == 7 && lost == 0 {
			got = append(got[:3], got[4:]...)
		}
		if !reflect.DeepEqual(got, want) || lost > 1 || tail != nil {
			t.Fatalf("%q:\n got %q, %d lost, tail %v\nwant %q", in, got, lost, tail, want)
		}
	})
}

// readAll reads a CSV file holding in, each row's fields joined by NUL.
func readAll(t *testing.T, in string) (rows []string, lost int64, tail error) {
	path := filepath.Join(t.TempDir(), "threadcap_samples_2026-11-21T14Z.csv")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := hourfile.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		fields, ok := r.Next()
		if !ok {
			return rows, r.Lost(), r.Tail()
		}
		// The reader's text of a row, when it gives one, is its fields joined by commas.
		if text := r.Text(); text != nil && !bytes.Equal(text, bytes.Join(fields, []byte(","))) {
			t.Fatalf("row %q has text %q", fields, text)
		}
		rows = append(rows, string(bytes.Join(fields, []byte{0})))
	}
}

// TestForReadingChoosesPerHour: an hour is read from its CSV files when it has any (both
// plain and compressed when the clock went back), else from its Parquet file; a Parquet
// file being written is never read.
func TestForReadingChoosesPerHour(t *testing.T) {
	dir := t.TempDir()
	h := func(n int) time.Time { return time.Date(2026, 11, 21, n, 0, 0, 0, time.UTC) }
	for _, name := range []string{
		hourfile.Samples.Name(h(10), hourfile.Gzip), hourfile.Samples.ParquetPath(h(10), "db-7"), // both
		hourfile.Samples.ParquetPath(h(11), "db-7"),                                             // parquet
		hourfile.Samples.ParquetPath(h(12), "db-7") + hourfile.Tmp,                              // being written
		hourfile.Samples.Name(h(13), hourfile.Gzip), hourfile.Samples.Name(h(13), hourfile.CSV), // clock went back
		hourfile.Ticks.ParquetPath(h(11), "db-7"),
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, err := hourfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range hourfile.ForReading(all, hourfile.Samples) {
		rel, _ := filepath.Rel(dir, f.Path)
		got = append(got, filepath.ToSlash(rel))
		if pdir, n, ok := hourfile.ParsePath(f.Path); !ok || pdir != dir || n != f.Name {
			t.Errorf("ParsePath(%s) = %s, %+v, %v; want %s, %+v", f.Path, pdir, n, ok, dir, f.Name)
		}
	}
	want := []string{
		hourfile.Samples.Name(h(10), hourfile.Gzip), hourfile.Samples.ParquetPath(h(11), "db-7"),
		hourfile.Samples.Name(h(13), hourfile.Gzip), hourfile.Samples.Name(h(13), hourfile.CSV),
	}
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
}

// FuzzReaderParquet: whatever bytes of a Parquet hour a disk error changes, the reader
// neither panics nor invents rows: it fails to open the file, or reads rows (as many as
// the file has at most) and says why it stopped short when it did.
func FuzzReaderParquet(f *testing.F) {
	var pq bytes.Buffer
	csv := []byte(schema.Header())
	for i := range 300 {
		s := state.Sample{Time: time.Unix(1_800_000_000+int64(i/10), 0), Pid: int32(i), Tid: int32(i), Process: "p" + strconv.Itoa(i%7),
			State: state.State(i % 5), Cmdline: strings.Repeat("x", i%50)}
		csv = schema.AppendCSV(csv, &s)
	}
	if _, err := parquet.Write(&pq, bytes.NewReader(csv), hourfile.Samples, "db-7"); err != nil {
		f.Fatal(err)
	}
	whole := pq.Bytes()
	f.Add(uint32(len(whole)/2), byte(0xff), uint32(0))
	f.Add(uint32(100), byte(0), uint32(len(whole)))
	f.Add(uint32(len(whole)-20), byte(1), uint32(0))
	f.Fuzz(func(t *testing.T, at uint32, xor byte, cut uint32) {
		b := append([]byte{}, whole...)
		b[int(at)%len(b)] ^= xor
		if cut > 0 {
			b = b[:int(cut)%len(b)]
		}
		path := filepath.Join(t.TempDir(), "db-7.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := hourfile.OpenReader(path)
		if err != nil {
			return
		}
		defer r.Close()
		r.Only("sample_time", "state", "process", "cmdline")
		n := 0
		for {
			if _, ok := r.Next(); !ok {
				break
			}
			n++
		}
		if n > 300 {
			t.Fatalf("%d rows from a file of 300", n)
		}
	})
}

// FuzzReaderCompressedCut: a compressed hour cut short anywhere gives rows that are the
// first rows of the whole file, as written, and says why it stopped when it did.
func FuzzReaderCompressedCut(f *testing.F) {
	csv := []byte(schema.Header())
	for i := range 2000 {
		s := state.Sample{Time: time.Unix(1_800_000_000+int64(i/10), 0), Pid: int32(i), Tid: int32(i * 7), Process: "p" + strconv.Itoa(i*31%97),
			Cmdline: strconv.Itoa(i*i) + "\n" + strconv.Itoa(i)}
		csv = schema.AppendCSV(csv, &s)
	}
	paths := writeFormats(f, csv)
	var full []string
	for _, suffix := range []string{hourfile.CSV} {
		full = readRows(f, paths[suffix])
	}
	compressed := map[bool][]byte{}
	for zst, suffix := range map[bool]string{false: hourfile.Gzip, true: hourfile.Zstd} {
		b, err := os.ReadFile(paths[suffix])
		if err != nil {
			f.Fatal(err)
		}
		compressed[zst] = b
	}
	f.Add(false, uint32(1000))
	f.Add(true, uint32(5000))
	f.Fuzz(func(t *testing.T, zst bool, cut uint32) {
		whole := compressed[zst]
		b := whole[:int(cut)%len(whole)]
		suffix := map[bool]string{false: hourfile.Gzip, true: hourfile.Zstd}[zst]
		path := filepath.Join(t.TempDir(), "threadcap_samples_2026-11-21T14Z"+suffix)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := hourfile.OpenReader(path)
		if err != nil {
			return // cut in its header: nothing to read
		}
		defer r.Close()
		var got []string
		for {
			fields, ok := r.Next()
			if !ok {
				break
			}
			got = append(got, string(bytes.Join(fields, []byte{0})))
		}
		if len(got) > len(full) || !slices.Equal(got, full[:len(got)]) {
			t.Fatalf("cut at %d of %d: %d rows that are not the first of the file's %d", len(b), len(whole), len(got), len(full))
		}
		if r.Tail() == nil && len(got) < len(full) {
			t.Fatalf("cut at %d of %d: %d rows of %d, and no word of why", len(b), len(whole), len(got), len(full))
		}
	})
}

// readRows is the rows of path, each as its fields joined by NUL.
func readRows(t testing.TB, path string) []string {
	r, err := hourfile.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []string
	for {
		fields, ok := r.Next()
		if !ok {
			return rows
		}
		rows = append(rows, string(bytes.Join(fields, []byte{0})))
	}
}

// TestReaderFollowsAGrowingFile: a plain hour file read to its end while the writer adds
// to it, followed after each addition, gives every row once, as the whole file reads: a
// row cut anywhere (in a field, in a quoted field, at its newline) is read whole once the
// rest is there. A cut just after a newline inside a quoted field is left out: the writer
// writes whole rows in one write, and a reader that finds a quote open over whole lines
// at the end takes it for damage.
func TestReaderFollowsAGrowingFile(t *testing.T) {
	csv := sampleCSV(t)
	path := filepath.Join(t.TempDir(), "threadcap_samples_2026-11-21T14Z.csv")
	want, _, _ := readFile(t, writeFile(t, path, csv))
	header := bytes.IndexByte(csv, '\n') + 1
	for _, step := range []int{1, 7, 64, 1000} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(csv[:header]); err != nil {
			t.Fatal(err)
		}
		r, err := hourfile.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{string(bytes.Join(r.Header(), []byte("|")))}
		for at := header; at < len(csv); {
			next := min(at+step, len(csv))
			for next < len(csv) && csv[next-1] == '\n' && insideQuotes(csv[:next]) {
				next++
			}
			if _, err := f.Write(csv[at:next]); err != nil {
				t.Fatal(err)
			}
			at = next
			r.Follow()
			for {
				fields, ok := r.Next()
				if !ok {
					break
				}
				got = append(got, string(bytes.Join(fields, []byte("|"))))
			}
		}
		if !reflect.DeepEqual(got, want) || r.Lost() != 0 || r.Tail() != nil {
			t.Errorf("written %d bytes at a time: %d lost, tail %v, rows\n%q\nwant\n%q", step, r.Lost(), r.Tail(), got, want)
		}
		r.Close()
		f.Close()
	}
}

// insideQuotes says whether b ends inside a quoted field.
func insideQuotes(b []byte) bool { return bytes.Count(b, []byte{'"'})%2 == 1 }

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
