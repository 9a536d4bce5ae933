// SPDX-License-Identifier: Apache-2.0

package rowtest

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// ReadParquet reads a Parquet file back: its column names, and its rows as values by
// column name (nil for NULL; int64, int32, bool or string otherwise).
func ReadParquet(t testing.TB, path string) ([]string, []map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("%s is not a Parquet file: %v", path, err)
	}
	var names []string
	for _, field := range pf.Schema().Fields() {
		names = append(names, field.Name())
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var out []map[string]any
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := map[string]any{}
			for _, v := range row {
				name := names[v.Column()]
				switch {
				case v.IsNull():
					m[name] = nil
				case v.Kind() == parquet.Int64:
					m[name] = v.Int64()
				case v.Kind() == parquet.Int32:
					m[name] = v.Int32()
				case v.Kind() == parquet.Boolean:
					m[name] = v.Boolean()
				default:
					m[name] = string(v.ByteArray())
				}
			}
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return names, out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
