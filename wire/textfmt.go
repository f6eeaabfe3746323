package wire

import (
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/types"
)

// This file renders Arrow values the way PostgreSQL 15's output functions do
// (boolout, int8out, float8out, numeric_out, textout, timestamp_out with DateStyle
// ISO; the formatting itself is exec/types' AppendFloat, AppendDecimal and
// AppendTimestamp), so clients parse them as they would PostgreSQL's own. The hot path is
// appenderFor: one type switch per column and batch, then a typed loop that appends
// into a reused buffer without allocating.

// IsNull reports whether row i of arr is NULL. Unlike arr.IsNull, it is also true
// for arrays of the Null type, which have no validity bitmap.
func IsNull(arr arrow.Array, i int) bool {
	return arr.DataType().ID() == arrow.NULL || arr.IsNull(i)
}

// AppendText appends the PostgreSQL text representation of row i of arr to dst and
// returns the extended buffer. For a NULL (see IsNull) it appends nothing: the
// protocol and psql both show NULL by other means than text.
//
// Types: boolean as t/f; integers in decimal; double as PostgreSQL 15 prints it
// (shortest round-trip digits, exponent form outside 1e-4 <= |v| < 1e15, Infinity,
// -Infinity, NaN); decimal with exactly its scale's digits after the point; text as
// is; timestamp as YYYY-MM-DD HH:MM:SS[.ffffff] with the fraction's trailing zeros
// trimmed and BC for years before 1. Other Arrow types, which the engine does not
// produce, fall back to Arrow's own ValueStr.
func AppendText(dst []byte, arr arrow.Array, f arrow.Field, i int) []byte {
	if IsNull(arr, i) {
		return dst
	}
	return appenderFor(arr, f, nil)(dst, i)
}

// textAppender appends the text of one row of the array it was made for.
type textAppender func(dst []byte, i int) []byte

// appenderFor returns the text appender for arr's type, of the column f (a
// DATE's arrays are timestamps: types.IsDate), a timestamp with time zone
// printed in the session's zone loc (nil: UTC). The caller checks nulls.
func appenderFor(arr arrow.Array, f arrow.Field, loc *time.Location) textAppender {
	if a, ok := arr.(*array.Timestamp); ok && types.IsDate(f) {
		vs := a.Values()
		return func(dst []byte, i int) []byte { return types.AppendDate(dst, int64(vs[i])) }
	}
	switch oid := types.FieldOID(f); {
	case oid == types.OIDTimestamptz:
		if a, ok := arr.(*array.Timestamp); ok {
			vs := a.Values()
			if loc != nil && loc != time.UTC {
				return func(dst []byte, i int) []byte { return types.AppendTimestamptzIn(dst, int64(vs[i]), loc) }
			}
			return func(dst []byte, i int) []byte { return types.AppendTimestamptz(dst, int64(vs[i])) }
		}
	case oid == types.OIDBytea:
		if a, ok := arr.(*array.String); ok {
			return func(dst []byte, i int) []byte { return types.AppendBytea(dst, a.Value(i)) }
		}
	case oid == types.OIDFloat4:
		if a, ok := arr.(*array.Float64); ok {
			vs := a.Float64Values()
			return func(dst []byte, i int) []byte { return types.AppendFloat4(dst, vs[i]) }
		}
	case oid == types.OIDBpchar:
		if a, ok := arr.(*array.String); ok && types.FieldLen(f) > 0 {
			n := types.FieldLen(f)
			return func(dst []byte, i int) []byte { return types.AppendBpchar(dst, a.Value(i), n) }
		}
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 't')
			}
			return append(dst, 'f')
		}
	case *array.Int64:
		vs := a.Int64Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, vs[i], 10) }
	case *array.Float64:
		vs := a.Float64Values()
		return func(dst []byte, i int) []byte { return types.AppendFloat(dst, vs[i]) }
	case *array.Decimal128:
		vs := a.Values()
		scale := int(a.DataType().(*arrow.Decimal128Type).Scale)
		return func(dst []byte, i int) []byte { return types.AppendDecimal(dst, vs[i], scale) }
	case *array.String:
		// The value bytes by the offsets, without Value's string header.
		offs, data := a.ValueOffsets(), a.ValueBytes()
		base := offs[0]
		return func(dst []byte, i int) []byte { return append(dst, data[offs[i]-base:offs[i+1]-base]...) }
	case *array.Timestamp:
		vs := a.Values() // microseconds: the engine's only timestamp unit
		return func(dst []byte, i int) []byte { return types.AppendTimestamp(dst, int64(vs[i])) }
	}
	return func(dst []byte, i int) []byte { return append(dst, arr.ValueStr(i)...) }
}
