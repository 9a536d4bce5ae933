// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"testing"

	"github.com/threadcap/threadcap/output/internal/rowtest"
)

func BenchmarkAppendCSV(b *testing.B) {
	rows := rowtest.MysqlRows(tick, 1000, 1000)
	rows[7].Exe = "/opt/my app,v2/bin/\"app\""
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		buf = AppendCSV(buf[:0], &rows[n%len(rows)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(len(buf)), "bytes/row")
}
