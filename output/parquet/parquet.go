// SPDX-License-Identifier: Apache-2.0

// Package parquet writes threadcap's hour files as Parquet: a CSV hour of any schema
// version, read by its header, into the kind's Parquet schema (derived from
// output/schema's columns), and a closed hour into its place in the Parquet tree.
package parquet

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
	"github.com/threadcap/threadcap/output/schema"
)

// HostColumn is the column every Parquet file adds to its kind's (hourfile owns the name,
// which its reader leaves out).
const HostColumn = hourfile.HostColumn

// parquetRowGroup bounds the rows a writer holds before it writes them out, and so its
// memory: a row group of samples takes about 40 MiB before compression. The batches end
// the row groups (columnBatch.flush): the writer's own bound (MaxRowsPerRowGroup) holds
// only for rows given to WriteRows.
const parquetRowGroup = 256 << 10

// parquetNodes are the Parquet types of the schema's DuckDB types. Every column is optional,
// as an empty CSV field is NULL; text is dictionary-encoded, as most values repeat.
var parquetNodes = map[string]parquet.Node{
	schema.TypeTimestampTZ: parquet.Timestamp(parquet.Microsecond), // adjusted to UTC: TIMESTAMPTZ
	schema.TypeInteger:     parquet.Int(32),
	schema.TypeBigint:      parquet.Int(64),
	schema.TypeVarchar:     parquet.Encoded(parquet.String(), &parquet.RLEDictionary),
	schema.TypeBoolean:     parquet.Leaf(parquet.BooleanType),
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
	for _, c := range schema.KindColumns[kind] {
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

// Stats says what writing a Parquet file found.
type Stats struct {
	Rows int64
	// Malformed counts records of the CSV skipped because they are not valid CSV, have the
	// wrong number of fields, or an unreadable time or number; a last row cut short counts.
	Malformed int64
}

// Write writes a kind's CSV hour file, read from in (decompressed), as Parquet to out,
// with host in every row. The CSV may be of any earlier schema version: its columns are found
// by its header's names, and the columns it lacks are NULL. Text loses the guard that the CSV
// gives it against spreadsheet formulas (hourfile.Unguard), as the Parquet file holds values,
// not text to open.
func Write(out io.Writer, in io.Reader, kind hourfile.Kind, host string) (Stats, error) {
	var st Stats
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
		parquet.CreatedBy("threadcap", strconv.Itoa(schema.Version), ""),
		parquet.KeyValueMetadata("threadcap.schema_version", strconv.Itoa(schema.Version)))
	b := newColumnBatch(w, conv)
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
		if !b.fits(fields) {
			if err := b.flush(); err != nil {
				return st, err
			}
		}
		if !b.add(conv, fields) {
			st.Malformed++
			continue
		}
		st.Rows++
	}
	if rr.Partial() > 0 {
		st.Malformed++
	}
	if err := b.flush(); err != nil {
		return st, err
	}
	return st, w.Close()
}

// Batches of rows go to the Parquet writer together, column by column: the writer takes a
// column's values in one call, where a row at a time costs a call per column per row, and
// rows of values cost a copy of every value to take them apart again.
const (
	parquetBatch = 1024
	// parquetArena holds a batch's text, copied out of the reader's buffer, which the next
	// record overwrites; it fits the longest record the reader returns.
	parquetArena = 4 << 20
)

// columnBatch is rows waiting for the writer, as a column of values each, and the text
// they point into.
type columnBatch struct {
	w *parquet.Writer
	// columns are host, then the kind's columns, parquetBatch values long, of which the
	// first n are the batch's rows: each record's values are stored at their row, with no
	// append to move each column's length, and a record found bad is simply not counted.
	columns [][]parquet.Value
	n       int
	grouped int    // rows written to the writer's current row group
	arena   []byte // never grown past its capacity: the values point into it
}

func newColumnBatch(w *parquet.Writer, c *rowConverter) *columnBatch {
	b := &columnBatch{w: w, columns: make([][]parquet.Value, 1+len(c.columns)), arena: make([]byte, 0, parquetArena)}
	for i := range b.columns {
		b.columns[i] = make([]parquet.Value, parquetBatch)
	}
	// Every row has the same host.
	for j := range b.columns[0] {
		b.columns[0][j] = c.host
	}
	return b
}

// fits reports whether a record fits in the batch: in its rows, in the row group, and its
// text in the arena the values point into.
func (b *columnBatch) fits(fields [][]byte) bool {
	size := 0
	for _, f := range fields {
		size += len(f)
	}
	return b.n < parquetBatch && b.grouped+b.n < parquetRowGroup && len(b.arena)+size <= cap(b.arena)
}

// add converts a record into the batch's next row; false for a record that does not fit
// its header, which leaves the batch as it was.
func (b *columnBatch) add(c *rowConverter, fields [][]byte) bool {
	mark := len(b.arena)
	if !c.row(b.columns[1:], b.n, fields, &b.arena) {
		b.arena = b.arena[:mark]
		return false
	}
	b.n++
	return true
}

// flush writes the batch's columns, and ends the row group when it has parquetRowGroup rows.
func (b *columnBatch) flush() error {
	if b.n == 0 {
		return nil
	}
	for i, cw := range b.w.ColumnWriters() {
		if _, err := cw.WriteRowValues(b.columns[i][:b.n]); err != nil {
			return err
		}
	}
	b.grouped += b.n
	b.n, b.arena = 0, b.arena[:0]
	if b.grouped >= parquetRowGroup {
		b.grouped = 0
		return b.w.Flush()
	}
	return nil
}

// rowConverter turns a CSV record of one header into values of the kind's schema.
type rowConverter struct {
	host parquet.Value
	// columns are the kind's columns, in the schema's order (after host), each with its
	// field in the record, -1 when the header lacks it.
	columns []schema.Column
	fields  []int
	types   []valueType     // of each column
	nulls   []parquet.Value // each column's NULL
	width   int             // fields in a record
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
		columns: schema.KindColumns[kind],
		width:   len(header),
	}
	for i, col := range c.columns {
		c.fields = append(c.fields, slices.Index(names, col.Name))
		c.types = append(c.types, valueTypes[col.Type])
		c.nulls = append(c.nulls, parquet.NullValue().Level(0, 0, i+1))
	}
	for _, n := range names {
		if !slices.ContainsFunc(c.columns, func(col schema.Column) bool { return col.Name == n }) {
			return nil, fmt.Errorf("the header has column %q, which a %s file of schema version %d does not: "+
				"is it a threadcap %s file, or of a newer threadcap?", n, kind, schema.Version, kind)
		}
	}
	return c, nil
}

// row stores the record's values at row j of columns, and appends their text to arena, which
// has room for it; false for a record whose field count or values do not fit its header,
// after which some columns may have a value at j and others not.
func (c *rowConverter) row(columns [][]parquet.Value, j int, fields [][]byte, arena *[]byte) bool {
	if len(fields) != c.width {
		return false
	}
	for i, field := range c.fields {
		var f []byte
		if field >= 0 {
			f = fields[field]
		}
		if len(f) == 0 {
			columns[i][j] = c.nulls[i]
			continue
		}
		if !c.value(&columns[i][j], c.types[i], f, arena) {
			return false
		}
	}
	return true
}

// valueType is a schema type as the converter switches on it: faster than its name.
type valueType int

const (
	valueText valueType = iota
	valueTime
	valueInt32
	valueInt64
	valueBool
)

var valueTypes = map[string]valueType{
	schema.TypeVarchar: valueText, schema.TypeTimestampTZ: valueTime, schema.TypeInteger: valueInt32, schema.TypeBigint: valueInt64, schema.TypeBoolean: valueBool,
}

// value stores the value of one non-empty field in v, as a non-NULL value of an optional
// column; text is copied to arena. The value is built in place: a Value is 24 bytes, and
// each copy of it costs.
func (c *rowConverter) value(v *parquet.Value, typ valueType, f []byte, arena *[]byte) bool {
	switch typ {
	case valueTime:
		if string(f) != string(c.lastTime) {
			t, err := time.Parse(hourfile.TimeLayout, string(f))
			if err != nil {
				return false
			}
			c.lastTime, c.lastMicros = append(c.lastTime[:0], f...), t.UnixMicro()
		}
		*v = parquet.Int64Value(c.lastMicros)
	case valueInt32:
		n, ok := parseInt(f)
		if !ok || n != int64(int32(n)) {
			return false
		}
		*v = parquet.Int32Value(int32(n))
	case valueInt64:
		n, ok := parseInt(f)
		if !ok {
			return false
		}
		*v = parquet.Int64Value(n)
	case valueBool:
		b, err := strconv.ParseBool(string(f))
		if err != nil {
			return false
		}
		*v = parquet.BooleanValue(b)
	default:
		start := len(*arena)
		*arena = append(*arena, hourfile.Unguard(f)...)
		*v = parquet.ByteArrayValue((*arena)[start:len(*arena):len(*arena)])
	}
	v.SetDefinitionLevel(1)
	return true
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
