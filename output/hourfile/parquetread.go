// SPDX-License-Identifier: Apache-2.0

package hourfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// HostColumn is the column every Parquet file adds to its kind's: the host the hour was
// recorded on, so that files of many hosts read as one table. A Reader leaves it out, as
// the CSV has none.
const HostColumn = "host"

// parquetBatch is how many values of a column a Parquet reader decodes at a time.
const parquetBatch = 256

// parquetRows reads a Parquet hour file's rows as the CSV's fields (see Reader), column by
// column: only the columns a reader asked for (Reader.Only) are decoded, the others read
// as empty.
type parquetRows struct {
	groups []parquet.RowGroup
	left   int64 // rows of groups[0] not read yet; -1 before it is opened
	// field and format are, per leaf column of the file, its field in a record (-1 for
	// host) and how its values read as CSV text; read says whether it is decoded.
	field   []int
	format  []valueFormat
	read    []bool
	cursors []*columnCursor
	fields  [][]byte
	bounds  [][2]int // of each field in arena
	arena   []byte
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

// recoverDamage turns a panic of the Parquet library into an error: it trusts the offsets
// and lengths a file holds, which a damaged file has wrong.
func recoverDamage(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("damaged Parquet file: %v", p)
	}
}

func openParquetReader(path string) (r *Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening hour file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			r, err = nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}()
	defer recoverDamage(&err)
	// The page index and bloom filters are of no use to a reader of every row.
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, err
	}
	// Only the codecs threadcap writes: zstd, or none. A damaged file that names another
	// can send its decoder past all memory (parquet-go's LZ4 doubles its buffer until
	// the data fits, and damaged data never does).
	for _, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if c := cc.MetaData.Codec; c != format.Zstd && c != format.Uncompressed {
				return nil, fmt.Errorf("column %v is compressed with %s: threadcap writes zstd", cc.MetaData.PathInSchema, c)
			}
		}
	}
	p := &parquetRows{groups: pf.RowGroups(), left: -1}
	r = &Reader{path: path, pq: p, closer: func() error { p.close(); return f.Close() }}
	for _, col := range pf.Schema().Columns() {
		leaf, ok := pf.Schema().Lookup(col...)
		if !ok || len(col) != 1 {
			return nil, fmt.Errorf("column %v is not a threadcap column", col)
		}
		if col[0] == HostColumn {
			p.field, p.format, p.read = append(p.field, -1), append(p.format, formatText), append(p.read, false)
			continue
		}
		vf, err := formatOf(leaf.Node)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col[0], err)
		}
		p.field, p.format, p.read = append(p.field, len(r.header)), append(p.format, vf), append(p.read, true)
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

// only decodes only the columns named, the others reading as empty.
func (p *parquetRows) only(header [][]byte, names []string) {
	for c, f := range p.field {
		p.read[c] = f >= 0 && slices.Contains(names, string(header[f]))
	}
}

// next returns the next row's fields; io.EOF after the last.
func (p *parquetRows) next() (fields [][]byte, err error) {
	defer recoverDamage(&err)
	defer func() {
		if err != nil {
			p.groups = nil // the rest is not read
		}
	}()
	for p.left <= 0 {
		if err := p.nextGroup(); err != nil {
			return nil, err
		}
	}
	p.left--
	p.arena = p.arena[:0]
	clear(p.bounds)
	for _, c := range p.cursors {
		v, err := c.next()
		if err != nil {
			return nil, err
		}
		start := len(p.arena)
		if !v.IsNull() {
			p.appendValue(v, p.format[c.column])
		}
		p.bounds[p.field[c.column]] = [2]int{start, len(p.arena)}
	}
	// The fields point into the arena only now that it has stopped growing.
	for i, b := range p.bounds {
		p.fields[i] = p.arena[b[0]:b[1]:b[1]]
	}
	return p.fields, nil
}

// nextGroup opens the cursors of the next row group; io.EOF after the last.
func (p *parquetRows) nextGroup() error {
	p.closeCursors()
	if p.left == 0 && len(p.groups) > 0 {
		p.groups = p.groups[1:]
	}
	if len(p.groups) == 0 {
		return io.EOF
	}
	rg := p.groups[0]
	chunks := rg.ColumnChunks()
	for c, read := range p.read {
		if read && c < len(chunks) {
			p.cursors = append(p.cursors, &columnCursor{column: c, pages: chunks[c].Pages(), buf: make([]parquet.Value, parquetBatch)})
		}
	}
	p.left = rg.NumRows()
	return nil
}

func (p *parquetRows) closeCursors() {
	for _, c := range p.cursors {
		c.close()
	}
	p.cursors = p.cursors[:0]
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
	defer func() { _ = recover() }() // what a damaged file did to the library's state
	p.closeCursors()
	p.groups = nil
}

// columnCursor reads one column chunk's values, a page at a time.
type columnCursor struct {
	column int
	pages  parquet.Pages
	page   parquet.Page
	values parquet.ValueReader
	buf    []parquet.Value
	n, i   int
}

// next is the column's next value, valid until a page is read after it.
func (c *columnCursor) next() (parquet.Value, error) {
	for c.i == c.n {
		if c.values != nil {
			n, err := c.values.ReadValues(c.buf)
			c.n, c.i = n, 0
			if n > 0 {
				break
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return parquet.Value{}, err
			}
		}
		if c.page != nil {
			parquet.Release(c.page)
			c.page, c.values = nil, nil
		}
		page, err := c.pages.ReadPage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // fewer values than the row group has rows
			}
			return parquet.Value{}, err
		}
		c.page, c.values = page, page.Values()
	}
	v := c.buf[c.i]
	c.i++
	return v, nil
}

func (c *columnCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	c.pages.Close()
}
