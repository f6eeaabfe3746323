package types

import (
	"bytes"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// PostgreSQL's text output of the engine's values, in one place: the wire server
// sends it, CAST(x AS TEXT) produces it, EXPLAIN prints it. Each function appends
// to dst without allocating.

// AppendFloat appends v as PostgreSQL 12+ prints a double: the shortest text
// that reads back exactly, in exponent form below 1e-4 and from 1e15 up.
func AppendFloat(dst []byte, v float64) []byte {
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
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'e', -1, 64)
	if exp := exponent(dst[start:]); exp < -4 || exp >= 15 {
		return dst
	}
	return strconv.AppendFloat(dst[:start], v, 'f', -1, 64)
}

// exponent reads the exponent of a number strconv formatted with 'e'.
func exponent(b []byte) int {
	i := bytes.LastIndexByte(b, 'e') + 1
	neg := b[i] == '-'
	exp := 0
	for _, c := range b[i+1:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		return -exp
	}
	return exp
}

const microsPerSecond = 1_000_000

// AppendDate appends the date of microseconds since the epoch as PostgreSQL
// prints a date: YYYY-MM-DD (BC for years before 1).
func AppendDate(dst []byte, micros int64) []byte {
	t := AppendTimestamp(nil, micros)
	if len(t) >= 10 && t[4] == '-' {
		dst = append(dst, t[:10]...)
		if len(t) > 3 && string(t[len(t)-3:]) == " BC" {
			dst = append(dst, " BC"...)
		}
		return dst
	}
	return append(dst, t...) // infinity
}

// AppendTimestamp appends microseconds since the epoch as PostgreSQL prints a
// timestamp: YYYY-MM-DD HH:MM:SS, then the fraction without trailing zeros.
//
// PostgreSQL keeps the extreme int64 values for infinity and -infinity.
func AppendTimestamp(dst []byte, micros int64) []byte {
	switch micros {
	case math.MaxInt64:
		return append(dst, "infinity"...)
	case math.MinInt64:
		return append(dst, "-infinity"...)
	}
	secs, frac := micros/microsPerSecond, micros%microsPerSecond
	if frac < 0 {
		secs, frac = secs-1, frac+microsPerSecond
	}
	t := time.Unix(secs, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	bc := y <= 0
	if bc {
		y = 1 - y // there is no year 0: 1 BC precedes 1 AD
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(mo), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, d, 2)
	dst = append(dst, ' ')
	dst = appendPadded(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, mi, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, s, 2)
	if frac != 0 {
		dst = append(dst, '.')
		digits := 6
		for frac%10 == 0 {
			frac /= 10
			digits--
		}
		dst = appendPadded(dst, int(frac), digits)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

func appendPadded(dst []byte, v, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], int64(v), 10)
	for range width - len(s) {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// AppendDecimal appends the unscaled number n with scale digits after the
// decimal point, as numeric_out prints a numeric(p, scale): 1.50, -0.05, 0.000.
func AppendDecimal(dst []byte, n decimal128.Num, scale int) []byte {
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
