// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// HostColumn is the column every Parquet file adds to its kind's: the host the hour was
// recorded on, so that files of many hosts read as one table. A Reader leaves it out, as
// the CSV has none.
const HostColumn = "host"

// parquetBatch is how many rows a Parquet reader decodes at a time.
const parquetBatch = 256

// parquetRows reads a Parquet hour file's rows as the CSV's fields (see Reader).
type parquetRows struct {
	groups []parquet.RowGroup
	rows   parquet.Rows // of groups[0], nil before it is opened
	batch  []parquet.Row
	n, i   int // rows decoded in batch, and the next to return
	// columns are, per leaf column of the file, its field in a record (-1 for host) and
	// how its values read as CSV text.
	field  []int
	format []valueFormat
	fields [][]byte
	bounds [][2]int // of each field in arena
	arena  []byte
	// lastMicros and lastTime cache the last time formatted: every row of a tick has the
	// same.
	lastMicros int64
	lastTime   []byte
}

// valueFormat is how a Parquet column's values read as the CSV's text.
type valueFormat int

const (
	formatText valueFormat = iota // guarded as AppendText guards it
	formatInt
	formatBool
	formatMicros // a timestamp of microseconds, as TimeLayout
	formatMillis
	formatNanos
)

func openParquetReader(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	p := &parquetRows{groups: pf.RowGroups(), batch: make([]parquet.Row, parquetBatch)}
	r := &Reader{path: path, pq: p, closer: func() error { p.close(); return f.Close() }}
	for _, col := range pf.Schema().Columns() {
		leaf, ok := pf.Schema().Lookup(col...)
		if !ok || len(col) != 1 {
			f.Close()
			return nil, fmt.Errorf("reading %s: column %v is not a threadcap column", path, col)
		}
		if col[0] == HostColumn {
			p.field = append(p.field, -1)
			p.format = append(p.format, formatText)
			continue
		}
		vf, err := formatOf(leaf.Node)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: column %s: %w", path, col[0], err)
		}
		p.field = append(p.field, len(r.header))
		p.format = append(p.format, vf)
		r.header = append(r.header, []byte(col[0]))
	}
	r.columns = len(r.header)
	p.fields, p.bounds = make([][]byte, r.columns), make([][2]int, r.columns)
	return r, nil
}

// formatOf is how the values of a column of type node read as CSV text.
func formatOf(node parquet.Node) (valueFormat, error) {
	t := node.Type()
	switch t.Kind() {
	case parquet.ByteArray:
		return formatText, nil
	case parquet.Boolean:
		return formatBool, nil
	case parquet.Int32:
		return formatInt, nil
	case parquet.Int64:
		lt := t.LogicalType()
		if lt == nil {
			return formatInt, nil
		}
		ts, ok := lt.Value.(*format.TimestampType)
		if !ok {
			return formatInt, nil
		}
		switch ts.Unit.Value.(type) {
		case *format.MilliSeconds:
			return formatMillis, nil
		case *format.NanoSeconds:
			return formatNanos, nil
		}
		return formatMicros, nil
	}
	return 0, fmt.Errorf("type %v is not one threadcap writes", t)
}

// read returns the next row's fields; io.EOF after the last.
func (p *parquetRows) read() ([][]byte, error) {
	for p.i == p.n {
		if err := p.decode(); err != nil {
			return nil, err
		}
	}
	row := p.batch[p.i]
	p.i++
	p.arena = p.arena[:0]
	clear(p.bounds)
	for _, v := range row {
		c := v.Column()
		if c < 0 || c >= len(p.field) || p.field[c] < 0 {
			continue
		}
		start := len(p.arena)
		if !v.IsNull() {
			p.appendValue(v, p.format[c])
		}
		p.bounds[p.field[c]] = [2]int{start, len(p.arena)}
	}
	// The fields point into the arena only now that it has stopped growing.
	for i, b := range p.bounds {
		p.fields[i] = p.arena[b[0]:b[1]:b[1]]
	}
	return p.fields, nil
}

// decode decodes the next batch of rows, from the next row group when this one is done.
func (p *parquetRows) decode() error {
	p.i, p.n = 0, 0
	for len(p.groups) > 0 {
		if p.rows == nil {
			p.rows = p.groups[0].Rows()
		}
		n, err := p.rows.ReadRows(p.batch)
		p.n = n
		if errors.Is(err, io.EOF) {
			p.rows.Close()
			p.rows = nil
			p.groups = p.groups[1:]
			err = nil
		}
		if n > 0 || err != nil {
			return err
		}
	}
	return io.EOF
}

func (p *parquetRows) appendValue(v parquet.Value, f valueFormat) {
	switch f {
	case formatInt:
		if v.Kind() == parquet.Int32 {
			p.arena = strconv.AppendInt(p.arena, int64(v.Int32()), 10)
		} else {
			p.arena = strconv.AppendInt(p.arena, v.Int64(), 10)
		}
	case formatBool:
		p.arena = strconv.AppendBool(p.arena, v.Boolean())
	case formatMicros, formatMillis, formatNanos:
		n := v.Int64()
		if n != p.lastMicros || p.lastTime == nil {
			var t time.Time
			switch f {
			case formatMillis:
				t = time.UnixMilli(n)
			case formatNanos:
				t = time.Unix(0, n)
			default:
				t = time.UnixMicro(n)
			}
			p.lastMicros, p.lastTime = n, t.Local().AppendFormat(p.lastTime[:0], TimeLayout)
		}
		p.arena = append(p.arena, p.lastTime...)
	default:
		b := v.ByteArray()
		if len(b) > 0 && NeedsGuard(b[0]) {
			p.arena = append(p.arena, guard)
		}
		p.arena = append(p.arena, b...)
	}
}

func (p *parquetRows) close() {
	if p.rows != nil {
		p.rows.Close()
		p.rows = nil
	}
	p.groups = nil
}
