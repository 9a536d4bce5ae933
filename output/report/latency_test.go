// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadcap/threadcap/output"
	"github.com/threadcap/threadcap/state"
)

// TestLatency sums the minutes of the window, by span, and reads percentiles off the
// log2 buckets.
func TestLatency(t *testing.T) {
	dir := t.TempDir()
	first := time.Date(2026, 11, 21, 3, 10, 0, 0, time.Local)
	w, err := output.New(output.Config{Dir: dir, Clock: func() time.Time { return first }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		minute := first.Add(time.Duration(i) * time.Minute)
		// 10 queries a minute: 9 of 5-8 ms (bucket 13), 1 of 100 ms (bucket 17), on CPU 1 ms
		// each (bucket 10).
		q := state.SpanMinute{Minute: minute, Span: "query", Count: 10, WallUs: 9*6000 + 100_000,
			PartUs: [4]int64{10_000, 4000, 140_000, 0}}
		q.WallHist[13], q.WallHist[17], q.CPUHist[10] = 9, 1, 10
		l := state.SpanMinute{Minute: minute, Span: "lock_wait", Count: 1, WallUs: 1000, PartUs: [4]int64{0, 0, 1000, 0}}
		l.WallHist[10], l.CPUHist[0] = 1, 1
		if err := w.WriteSpans(minute, []state.SpanMinute{q, l}); err != nil {
			t.Fatal(err)
		}
		// 100 reads a minute of 4 KiB: 98 at the device for 64-128 µs (bucket 7), two for
		// 8-16 ms (bucket 14), all queued under 1 µs; and one flush.
		r := state.DiskIO{Disk: "vda", Op: state.IORead, IOStat: state.IOStat{Requests: 100, Bytes: 409600,
			QueueNs: 50_000, DeviceNs: 98*100_000 + 2*10_000_000}}
		r.QueueHist[0], r.DeviceHist[7], r.DeviceHist[14] = 100, 98, 2
		f := state.DiskIO{Disk: "vda", Op: state.IOFlush, IOStat: state.IOStat{Requests: 1, DeviceNs: 2_000_000}}
		f.QueueHist[0], f.DeviceHist[11] = 1, 1
		if err := w.WriteIO(minute, []state.DiskIO{f, r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The last two minutes.
	win := Window{From: first.Add(time.Minute), To: first.Add(3 * time.Minute)}
	lat, err := Latency(dir, win)
	if err != nil {
		t.Fatal(err)
	}
	got := lat.Spans
	if len(got) != 2 || got[0].Span != "query" || got[0].Count != 20 || got[1].Span != "lock_wait" || got[1].Count != 2 {
		t.Fatalf("latency %+v, want query (20) then lock_wait (2)", got)
	}
	q := &got[0]
	if p50, p90, p99 := q.Percentile(&q.WallHist, 0.5), q.Percentile(&q.WallHist, 0.9), q.Percentile(&q.WallHist, 0.99); p50 != 8192 || p90 != 8192 || p99 != 131072 {
		t.Errorf("wall p50 %d p90 %d p99 %d µs, want 8192, 8192 and 131072", p50, p90, p99)
	}
	var out bytes.Buffer
	if err := RenderLatency(&out, lat, win, FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %q: %v", out.String(), err)
	}
	want := []string{"query", "20", "15.400", "8.192", "8.192", "131.072", "1.024", "1.024", "1.024", "0.06", "0.03", "0.91", "0.00"}
	for i, v := range want {
		if rows[1][i] != v {
			t.Errorf("%s = %s, want %s", rows[0][i], rows[1][i], v)
		}
	}
	if _, err := Latency(t.TempDir(), win); err == nil {
		t.Error("a directory without spans or io files gave no error")
	}

	// The disks: the read first (more time at the device), then the flush.
	if len(lat.Disks) != 2 || lat.Disks[0].Op != "read" || lat.Disks[1].Op != "flush" {
		t.Fatalf("disks %+v, want vda read then vda flush", lat.Disks)
	}
	out.Reset()
	if err := RenderLatency(&out, lat, win, FormatTable); err != nil {
		t.Fatal(err)
	}
	t.Logf("latency view:\n%s", out.String())
	var read []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "vda" && f[1] == "read" {
			read = f
		}
	}
	wantRead := []string{"vda", "read", "200", "0.8", "0.000", "0.298", "0.001", "0.001", "0.001", "0.128", "0.128", "16.384"}
	if !slices.Equal(read, wantRead) {
		t.Errorf("the text view's vda read row is %q, want %q", read, wantRead)
	}
	out.Reset()
	if err := RenderLatency(&out, lat, win, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Spans, Disks []map[string]string }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Spans) != 2 || len(doc.Disks) != 2 ||
		doc.Disks[0]["device_p99_ms"] != "16.384" {
		t.Errorf("json %s (%v): want 2 spans and 2 disks, the read's device p99 16.384", out.String(), err)
	}
}
