package records

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/types"
)

// A block is rows parsed a column at a time rather than a row at a time: a
// reader that has split a block of records into fields parses each column over
// every row of the block (ParseColumn), checks the columns the query does not
// read (ValidateColumn), and appends the rows found good (CommitBlock). The
// column's type then picks its parser once per block rather than once per
// field, and each column reaches its Arrow builder in one bulk append. A field
// that is bad marks its row bad (the first fault of the row is kept, in the
// order a row at a time finds it: the Builder's columns in order, then the
// unread ones), and CommitBlock leaves that row out, so a bad record costs its
// own row only, as Commit's row at a time does.

// blockColumn holds one column's values for the block being parsed; which
// slice depends on the column's type, as in value.
type blockColumn struct {
	valid []bool
	nulls int // rows of valid that are false
	i     []int64
	ts    []arrow.Timestamp // Timestamp and Date
	f     []float64
	d     []decimal128.Num
	b     []bool
	s     [][]byte
}

// ParseColumn parses column i of each of the block's rows: fields[r] is the
// text of row r's field, nil for NULL (an empty text is not nil), and
// ascii[r] whether row r
// is all ASCII (whose text then needs no UTF-8 check). A field that does not
// parse sets bad[r], unless it is set already, to an error naming the column.
// The block borrows the fields until CommitBlock. Every column of the Builder
// is parsed before CommitBlock, over the same number of rows.
func (bb *Builder) ParseColumn(i int, fields [][]byte, ascii []bool, bad []error) {
	n := len(fields)
	c := bb.blockColumn(i, n)
	t := bb.types[i]
	name := bb.schema.Field(i).Name
	fail := func(r int, err error) {
		c.valid[r] = false
		if bad[r] == nil {
			bad[r] = fmt.Errorf("column %s: %w", name, err)
		}
	}
	// parse is the general path, for what the fast ones below do not take.
	var v value
	parse := func(r int) bool {
		if err := parseValue(t, fields[r], &v, bb.zone); err != nil {
			fail(r, err)
			return false
		}
		return true
	}
	// A declared width or length (types.Type.Narrow) is checked by parseValue
	// alone: the fast paths below know only the holding type.
	narrow := t.Narrow()
	c.nulls = 0
	for r := range n {
		c.valid[r] = fields[r] != nil
		if fields[r] == nil {
			c.nulls++
		}
	}
	switch t.ID {
	case types.String:
		c.s = append(c.s[:0], fields...)
		for r, f := range fields {
			switch {
			case !c.valid[r]:
			case narrow: // varchar(n), char(n): the length check, char's padding
				if parse(r) {
					c.s[r] = v.s
				}
			case !ascii[r] && !utf8.Valid(f):
				fail(r, ErrInvalidUTF8)
			}
		}
	case types.Int64:
		for r, f := range fields {
			if !c.valid[r] {
				continue
			}
			if narrow { // smallint, integer, oid: the range check
				if parse(r) {
					c.i[r] = v.i
				}
				continue
			}
			if u, ok := digits8(f); ok {
				c.i[r] = int64(u)
				continue
			}
			var ok bool
			if c.i[r], ok = parseInt(f); !ok && parse(r) {
				c.i[r] = v.i
			}
		}
	case types.Decimal:
		prec, scale := int32(t.Precision), int32(t.Scale)
		for r, f := range fields {
			if !c.valid[r] {
				continue
			}
			var ok bool
			if c.d[r], ok = fixedDecimal(f, prec, scale); ok {
				continue
			}
			if c.d[r], ok = parseSmallDecimal(f, prec, scale); !ok && parse(r) {
				c.d[r] = v.d
			}
		}
	case types.Date:
		for r, f := range fields {
			if !c.valid[r] {
				continue
			}
			if days, ok := plainDays(f); ok {
				c.ts[r] = arrow.Timestamp(days * 86400 * 1_000_000)
			} else if parse(r) {
				c.ts[r] = arrow.Timestamp(v.i)
			}
		}
	default:
		for r := range fields {
			if !c.valid[r] || !parse(r) {
				continue
			}
			switch t.ID {
			case types.Timestamp:
				c.ts[r] = arrow.Timestamp(v.i)
			case types.Float64:
				c.f[r] = v.f
			case types.Bool:
				c.b[r] = v.b
			}
		}
	}
}

// blockColumn returns column i's block values, with room for n rows.
func (bb *Builder) blockColumn(i, n int) *blockColumn {
	if bb.block == nil {
		bb.block = make([]blockColumn, len(bb.types))
	}
	c := &bb.block[i]
	c.valid = grow(c.valid, n)
	switch bb.types[i].ID {
	case types.Int64:
		c.i = grow(c.i, n)
	case types.Timestamp, types.Date:
		c.ts = grow(c.ts, n)
	case types.Float64:
		c.f = grow(c.f, n)
	case types.Decimal:
		c.d = grow(c.d, n)
	case types.Bool:
		c.b = grow(c.b, n)
	}
	return c
}

// grow returns s with length n, reusing its array when it has room.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// ValidateColumn checks the text of column f of each of the block's rows, a
// column the query does not read, as Validate does (fields and ascii as
// ParseColumn's), setting bad[r] for a row whose field is not a value of its
// type unless it is set already.
func ValidateColumn(f types.Field, fields [][]byte, ascii []bool, bad []error) {
	for r, b := range fields {
		if b == nil || (ascii[r] && f.Type.ID == types.String && !f.Type.Narrow()) {
			continue
		}
		if err := Validate(f.Type, b); err != nil && bad[r] == nil {
			bad[r] = fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
}

// CommitBlock appends the rows of the block parsed by ParseColumn whose bad
// entry is nil (nbad is how many are not), which were size bytes of input.
func (bb *Builder) CommitBlock(bad []error, nbad, size int) {
	for i, bld := range bb.builders {
		c := &bb.block[i]
		valid := c.valid
		if nbad > 0 {
			c.keep(bb.types[i].ID, bad)
			valid = c.valid
		} else if c.nulls == 0 {
			valid = nil // all valid: the builders then set the bits a byte at a time
		}
		switch b := bld.(type) {
		case *array.BooleanBuilder:
			b.AppendValues(c.b, valid)
		case *array.Int64Builder:
			b.AppendValues(c.i, valid)
		case *array.Float64Builder:
			b.AppendValues(c.f, valid)
		case *array.Decimal128Builder:
			b.AppendValues(c.d, valid)
		case *array.StringBuilder:
			b.BinaryBuilder.AppendValues(c.s, valid)
		case *array.TimestampBuilder:
			b.AppendValues(c.ts, valid)
		}
		clear(c.s) // what the block borrowed
	}
	bb.rows += len(bad) - nbad
	bb.bytes += size
}

// keep drops from c the rows whose bad entry is not nil.
func (c *blockColumn) keep(id types.ID, bad []error) {
	k := 0
	for r := range bad {
		if bad[r] != nil {
			continue
		}
		c.valid[k] = c.valid[r]
		switch id {
		case types.Int64:
			c.i[k] = c.i[r]
		case types.Timestamp, types.Date:
			c.ts[k] = c.ts[r]
		case types.Float64:
			c.f[k] = c.f[r]
		case types.Decimal:
			c.d[k] = c.d[r]
		case types.Bool:
			c.b[k] = c.b[r]
		case types.String:
			c.s[k] = c.s[r]
		}
		k++
	}
	c.valid = c.valid[:k]
	switch id {
	case types.Int64:
		c.i = c.i[:k]
	case types.Timestamp, types.Date:
		c.ts = c.ts[:k]
	case types.Float64:
		c.f = c.f[:k]
	case types.Decimal:
		c.d = c.d[:k]
	case types.Bool:
		c.b = c.b[:k]
	case types.String:
		clear(c.s[k:])
		c.s = c.s[:k]
	}
}
