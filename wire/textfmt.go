package wire

import (
	"encoding/hex"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file renders Arrow values the way PostgreSQL 15's output functions do
// (boolout, int8out, float8out, numeric_out, textout, timestamp_out with DateStyle
// ISO), so clients parse them as they would PostgreSQL's own. The hot path is
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
// trimmed and BC for years before 1; binary as bytea hex (\x...). Other Arrow types
// fall back to Arrow's own ValueStr.
func AppendText(dst []byte, arr arrow.Array, i int) []byte {
	if IsNull(arr, i) {
		return dst
	}
	return appenderFor(arr)(dst, i)
}

// textAppender appends the text of one row of the array it was made for.
type textAppender func(dst []byte, i int) []byte

// appenderFor returns the text appender for arr's type. The caller checks nulls.
func appenderFor(arr arrow.Array) textAppender {
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
	case *array.Int32:
		vs := a.Int32Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(vs[i]), 10) }
	case *array.Int16:
		vs := a.Int16Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(vs[i]), 10) }
	case *array.Int8:
		vs := a.Int8Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(vs[i]), 10) }
	case *array.Uint64:
		vs := a.Uint64Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, vs[i], 10) }
	case *array.Uint32:
		vs := a.Uint32Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(vs[i]), 10) }
	case *array.Float64:
		vs := a.Float64Values()
		return func(dst []byte, i int) []byte { return appendFloat(dst, vs[i], 64) }
	case *array.Float32:
		vs := a.Float32Values()
		return func(dst []byte, i int) []byte { return appendFloat(dst, float64(vs[i]), 32) }
	case *array.Decimal128:
		vs := a.Values()
		scale := int(a.DataType().(*arrow.Decimal128Type).Scale)
		return func(dst []byte, i int) []byte { return appendDecimal128(dst, vs[i], scale) }
	case *array.String:
		return func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.LargeString:
		return func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.Binary:
		return func(dst []byte, i int) []byte { return appendBytea(dst, a.Value(i)) }
	case *array.Timestamp:
		vs := a.Values()
		unit := a.DataType().(*arrow.TimestampType).Unit
		return func(dst []byte, i int) []byte { return appendTimestamp(dst, int64(vs[i]), unit) }
	case *array.Date32:
		vs := a.Date32Values()
		return func(dst []byte, i int) []byte { return appendDate(dst, int64(vs[i])) }
	}
	return func(dst []byte, i int) []byte { return append(dst, arr.ValueStr(i)...) }
}

// appendFloat appends v as float8out (bitSize 64) or float4out (32) print it with
// the default extra_float_digits = 1: the shortest digits that read back as the same
// value, in plain notation for decimal exponents in [-4, 15) (float4: [-4, 6)) and
// as d.ddde+XX otherwise. Go's 'e' format with precision -1 produces exactly the
// digits and exponent spelling PostgreSQL's Ryu code does.
func appendFloat(dst []byte, v float64, bitSize int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	maxExp := 15
	if bitSize == 32 {
		maxExp = 6
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'e', -1, bitSize)
	// dst[start:] is [-]d[.ddd]e±XX[X]; read the exponent back.
	e := len(dst) - 1
	for dst[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range dst[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if dst[e+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= maxExp {
		return dst
	}
	// Rewrite as plain notation in place, from the digits of the e form.
	var digits [24]byte
	nd := 0
	neg := dst[start] == '-'
	for _, c := range dst[start:e] {
		if c >= '0' && c <= '9' {
			digits[nd] = c
			nd++
		}
	}
	dst = dst[:start]
	if neg {
		dst = append(dst, '-')
	}
	if exp < 0 {
		dst = append(dst, '0', '.')
		for k := -1; k > exp; k-- {
			dst = append(dst, '0')
		}
		return append(dst, digits[:nd]...)
	}
	if nd <= exp+1 {
		dst = append(dst, digits[:nd]...)
		for k := nd; k <= exp; k++ {
			dst = append(dst, '0')
		}
		return dst
	}
	dst = append(dst, digits[:exp+1]...)
	dst = append(dst, '.')
	return append(dst, digits[exp+1:nd]...)
}

// appendDecimal128 appends the unscaled number n with scale digits after the
// decimal point, as numeric_out prints a numeric(p, scale): 1.50, -0.05, 0.000.
func appendDecimal128(dst []byte, n decimal128.Num, scale int) []byte {
	if n.Sign() < 0 {
		dst = append(dst, '-')
		n = n.Negate() // cannot overflow: 38 digits are far below 2^127
	}
	// The magnitude's decimal digits, filled from the right, 19 at a time.
	var buf [40]byte
	pos := len(buf)
	hi, lo := uint64(n.HighBits()), n.LowBits()
	const chunk = 1e19
	for hi != 0 {
		var r uint64
		hi, r = hi/chunk, hi%chunk
		lo, r = bits.Div64(r, lo, chunk)
		for k := 0; k < 19; k++ {
			pos--
			buf[pos] = byte('0' + r%10)
			r /= 10
		}
	}
	for lo != 0 {
		pos--
		buf[pos] = byte('0' + lo%10)
		lo /= 10
	}
	digits := buf[pos:]
	if scale <= 0 {
		if len(digits) == 0 {
			return append(dst, '0')
		}
		dst = append(dst, digits...)
		for ; scale < 0; scale++ {
			dst = append(dst, '0')
		}
		return dst
	}
	intDigits := len(digits) - scale
	if intDigits <= 0 {
		dst = append(dst, '0', '.')
		for ; intDigits < 0; intDigits++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:intDigits]...)
	dst = append(dst, '.')
	return append(dst, digits[intDigits:]...)
}

// appendTimestamp appends a timestamp without time zone of the given unit since the
// Unix epoch as timestamp_out does with DateStyle ISO. Like PostgreSQL it keeps
// microseconds (finer units are floored) and spells the extreme int64 values, which
// PostgreSQL uses for them, infinity and -infinity.
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	switch v {
	case math.MaxInt64:
		return append(dst, "infinity"...)
	case math.MinInt64:
		return append(dst, "-infinity"...)
	}
	var micros int64
	switch unit {
	case arrow.Second:
		micros = v * 1e6
	case arrow.Millisecond:
		micros = v * 1e3
	case arrow.Microsecond:
		micros = v
	case arrow.Nanosecond:
		micros = floorDiv(v, 1e3)
	}
	secs := floorDiv(micros, 1e6)
	frac := micros - secs*1e6
	t := time.Unix(secs, 0).UTC()
	year, month, day := t.Date()
	dst, bc := appendYMD(dst, year, int(month), day)
	hh, mm, ss := t.Clock()
	dst = append(dst, ' ')
	dst = append2(dst, hh)
	dst = append(dst, ':')
	dst = append2(dst, mm)
	dst = append(dst, ':')
	dst = append2(dst, ss)
	if frac != 0 {
		var f [6]byte
		for k := 5; k >= 0; k-- {
			f[k] = byte('0' + frac%10)
			frac /= 10
		}
		n := 6
		for f[n-1] == '0' {
			n--
		}
		dst = append(dst, '.')
		dst = append(dst, f[:n]...)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendDate appends a date given as days since the Unix epoch as date_out does.
func appendDate(dst []byte, days int64) []byte {
	t := time.Unix(days*86400, 0).UTC()
	year, month, day := t.Date()
	dst, bc := appendYMD(dst, year, int(month), day)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendYMD appends YYYY-MM-DD. Years before 1 are PostgreSQL's BC years (year 0 is
// 1 BC), reported so that the caller appends the suffix after the time.
func appendYMD(dst []byte, year, month, day int) ([]byte, bool) {
	bc := year <= 0
	if bc {
		year = 1 - year
	}
	if year < 1000 {
		dst = append(dst, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10))
	} else {
		dst = strconv.AppendInt(dst, int64(year), 10)
	}
	dst = append(dst, '-')
	dst = append2(dst, month)
	dst = append(dst, '-')
	return append2(dst, day), bc
}

// append2 appends a two-digit number with a leading zero.
func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendBytea appends b as byteaout prints it with bytea_output = hex.
func appendBytea(dst []byte, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	return hex.AppendEncode(dst, b)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
