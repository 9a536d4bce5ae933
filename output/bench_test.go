// SPDX-License-Identifier: Apache-2.0

package output

import "testing"

// BenchmarkWriter measures the whole write path of a tick of 1000 threads, file writes
// included, on one goroutine.
func BenchmarkWriter(b *testing.B) {
	cfg, _, _ := testConfig(b.TempDir(), tick)
	w := newWriter(b, cfg)
	defer w.Close()
	rows := mysqlRows(tick, 1000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(tick, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.WrittenRows())/b.Elapsed().Seconds(), "rows/s")
}
