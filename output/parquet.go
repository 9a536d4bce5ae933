// SPDX-License-Identifier: Apache-2.0

package output

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/threadcap/threadcap/output/hourfile"
)

// HostColumn is the column every Parquet file adds to its kind's: the host the hour was
// recorded on, so that files of many hosts read as one table.
const HostColumn = "host"

// parquetRowGroup bounds the rows a writer holds before it writes them out, and so its
// memory: a row group of samples takes about 40 MiB before compression.
const parquetRowGroup = 256 << 10

// parquetNodes are the Parquet types of the schema's DuckDB types. Every column is optional,
// as an empty CSV field is NULL; text is dictionary-encoded, as most values repeat.
var parquetNodes = map[string]parquet.Node{
	typeTimestampTZ: parquet.Timestamp(parquet.Microsecond), // adjusted to UTC: TIMESTAMPTZ
	typeInteger:     parquet.Int(32),
	typeBigint:      parquet.Int(64),
	typeVarchar:     parquet.Encoded(parquet.String(), &parquet.RLEDictionary),
	typeBoolean:     parquet.Leaf(parquet.BooleanType),
}

// orderedGroup keeps the columns in the order of the schema: parquet.Group sorts them by
// name, which would make SELECT * differ from the CSV's.
type orderedGroup struct {
	parquet.Group
	order []string
}

func (g orderedGroup) Fields() []parquet.Field {
	fields := g.Group.Fields()
	slices.SortFunc(fields, func(a, b parquet.Field) int {
		return slices.Index(g.order, a.Name()) - slices.Index(g.order, b.Name())
	})
	return fields
}

// parquetSchema is the Parquet schema of a kind: host, then the kind's columns, each of the
// type the schema gives it, so that a column added to the schema needs no edit here.
func parquetSchema(kind hourfile.Kind) *parquet.Schema {
	g := orderedGroup{Group: parquet.Group{}, order: []string{HostColumn}}
	g.Group[HostColumn] = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
	for _, c := range KindColumns[kind] {
		g.Group[c.Name] = parquet.Optional(parquetNodes[c.Type])
		g.order = append(g.order, c.Name)
	}
	return parquet.NewSchema("threadcap_"+kind.String(), g)
}

// schemas are parquetSchema's for every kind, built once.
var schemas = func() map[hourfile.Kind]*parquet.Schema {
	m := map[hourfile.Kind]*parquet.Schema{}
	for _, k := range hourfile.Kinds() {
		m[k] = parquetSchema(k)
	}
	return m
}()

// ParquetStats says what writing a Parquet file found.
type ParquetStats struct {
	Rows int64
	// Malformed counts records of the CSV skipped because they are not valid CSV, have the
	// wrong number of fields, or an unreadable time or number; a last row cut short counts.
	Malformed int64
}

// WriteParquet writes a kind's CSV hour file, read from in (decompressed), as Parquet to out,
// with host in every row. The CSV may be of any earlier schema version: its columns are found
// by its header's names, and the columns it lacks are NULL. Text loses the guard that the CSV
// gives it against spreadsheet formulas (hourfile.Unguard), as the Parquet file holds values,
// not text to open.
func WriteParquet(out io.Writer, in io.Reader, kind hourfile.Kind, host string) (ParquetStats, error) {
	var st ParquetStats
	rr := hourfile.NewRecordReader(in)
	head, err := rr.Read()
	if errors.Is(err, io.EOF) {
		head, err = nil, nil // an empty file: an hour without rows
	}
	if err != nil {
		return st, fmt.Errorf("reading the header: %w", err)
	}
	conv, err := newRowConverter(kind, host, head)
	if err != nil {
		return st, err
	}
	w := parquet.NewWriter(out, schemas[kind],
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}),
		parquet.MaxRowsPerRowGroup(parquetRowGroup),
		parquet.CreatedBy("threadcap", strconv.Itoa(SchemaVersion), ""),
		parquet.KeyValueMetadata("threadcap.schema_version", strconv.Itoa(SchemaVersion)))
	rows := []parquet.Row{nil}
	for head != nil {
		fields, err := rr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, hourfile.ErrBareQuote) || errors.Is(err, hourfile.ErrQuote) {
			st.Malformed++
			continue
		}
		if err != nil {
			return st, err
		}
		row, ok := conv.row(rows[0][:0], fields)
		if !ok {
			st.Malformed++
			continue
		}
		rows[0] = row
		if _, err := w.WriteRows(rows); err != nil {
			return st, err
		}
		st.Rows++
	}
	if rr.Partial() > 0 {
		st.Malformed++
	}
	return st, w.Close()
}

// rowConverter turns a CSV record of one header into a Parquet row of the kind's schema.
type rowConverter struct {
	host parquet.Value
	// columns are the kind's columns, in the schema's order (after host), each with its
	// field in the record, -1 when the header lacks it.
	columns []Column
	fields  []int
	width   int // fields in a record
	// lastTime and lastMicros cache the last time parsed: every row of a tick has the same.
	lastTime   []byte
	lastMicros int64
}

func newRowConverter(kind hourfile.Kind, host string, header [][]byte) (*rowConverter, error) {
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = string(h)
	}
	c := &rowConverter{
		host:    parquet.ByteArrayValue([]byte(host)).Level(0, 0, 0),
		columns: KindColumns[kind],
		width:   len(header),
	}
	for _, col := range c.columns {
		c.fields = append(c.fields, slices.Index(names, col.Name))
	}
	for _, n := range names {
		if !slices.ContainsFunc(c.columns, func(col Column) bool { return col.Name == n }) {
			return nil, fmt.Errorf("the header has column %q, which a %s file of schema version %d does not: "+
				"is it a threadcap %s file, or of a newer threadcap?", n, kind, SchemaVersion, kind)
		}
	}
	return c, nil
}

// row appends the record's values to dst; ok is false for a record whose field count or
// values do not fit its header.
func (c *rowConverter) row(dst parquet.Row, fields [][]byte) (parquet.Row, bool) {
	if len(fields) != c.width {
		return dst, false
	}
	dst = append(dst, c.host)
	for i, col := range c.columns {
		column := i + 1
		var f []byte
		if c.fields[i] >= 0 {
			f = fields[c.fields[i]]
		}
		if len(f) == 0 {
			dst = append(dst, parquet.NullValue().Level(0, 0, column))
			continue
		}
		v, ok := c.value(col.Type, f)
		if !ok {
			return dst, false
		}
		dst = append(dst, v.Level(0, 1, column))
	}
	return dst, true
}

// value parses one non-empty field of a DuckDB type.
func (c *rowConverter) value(typ string, f []byte) (parquet.Value, bool) {
	switch typ {
	case typeTimestampTZ:
		if string(f) != string(c.lastTime) {
			t, err := time.Parse(hourfile.TimeLayout, string(f))
			if err != nil {
				return parquet.Value{}, false
			}
			c.lastTime, c.lastMicros = append(c.lastTime[:0], f...), t.UnixMicro()
		}
		return parquet.Int64Value(c.lastMicros), true
	case typeInteger:
		n, ok := parseInt(f)
		if !ok || n != int64(int32(n)) {
			return parquet.Value{}, false
		}
		return parquet.Int32Value(int32(n)), true
	case typeBigint:
		n, ok := parseInt(f)
		return parquet.Int64Value(n), ok
	case typeBoolean:
		b, err := strconv.ParseBool(string(f))
		return parquet.BooleanValue(b), err == nil
	default:
		return parquet.ByteArrayValue(hourfile.Unguard(f)), true
	}
}

// parseInt parses a decimal integer without the allocation strconv's string would cost.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
