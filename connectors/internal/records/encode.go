package records

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/types"
)

// What the sinks write (files, Kafka), so that the sources read it back
// unchanged: values in PostgreSQL's text output (exec/types/text.go), which
// the sources' parsers read (a TIMESTAMP as 2015-07-15 10:03:00.5, a DATE as
// 2015-07-15, a DECIMAL exactly, a DOUBLE as the shortest text that reads back
// exactly); in JSON, numbers and booleans bare, NULL as null, everything else a
// JSON string.

// QuoteCSV quotes the field dst[start:] in place when it must be: it holds
// the delimiter, a quote, CR or LF, or is empty (so it does not read back as
// NULL). Quotes inside are doubled.
func QuoteCSV(dst []byte, start int, delim byte) []byte {
	field := dst[start:]
	need := len(field) == 0
	quotes := 0
	for _, c := range field {
		switch c {
		case '"':
			quotes++
			need = true
		case '\r', '\n', delim:
			need = true
		}
	}
	if !need {
		return dst
	}
	// Grow by the two quotes and the doubled ones, then move the field from
	// the right so that it is read before it is overwritten.
	n := len(field)
	for range 2 + quotes {
		dst = append(dst, 0)
	}
	w := len(dst) - 1
	dst[w] = '"'
	w--
	for r := start + n - 1; r >= start; r-- {
		c := dst[r]
		dst[w] = c
		w--
		if c == '"' {
			dst[w] = '"'
			w--
		}
	}
	dst[w] = '"'
	return dst
}

// AppendText appends the text of row i of col, a column of type t, as
// PostgreSQL prints it. The row is not null.
func AppendText(dst []byte, col arrow.Array, t types.Type, i int) []byte {
	switch c := col.(type) {
	case *array.String:
		if t.OID == types.OIDBpchar {
			return types.AppendBpchar(dst, c.Value(i), int(t.Len)) // held without its blanks
		}
		return append(dst, c.Value(i)...)
	case *array.Int64:
		return strconv.AppendInt(dst, c.Value(i), 10)
	case *array.Float64:
		if t.OID == types.OIDFloat4 {
			return types.AppendFloat4(dst, c.Value(i))
		}
		return types.AppendFloat(dst, c.Value(i))
	case *array.Boolean:
		return strconv.AppendBool(dst, c.Value(i))
	case *array.Decimal128:
		return types.AppendDecimal(dst, c.Value(i), int(t.Scale))
	case *array.Timestamp:
		if t.ID == types.Date {
			return types.AppendDate(dst, int64(c.Value(i)))
		}
		if t.OID == types.OIDTimestamptz {
			return types.AppendTimestamptz(dst, int64(c.Value(i))) // in UTC, as the sources read it
		}
		return types.AppendTimestamp(dst, int64(c.Value(i)))
	}
	return append(dst, col.ValueStr(i)...)
}

// AppendJSONValue appends row i of col as a JSON value: null, a bare number
// or boolean (a DECIMAL's exact digits; a DOUBLE that JSON cannot hold, NaN
// or an infinity, as a string, which the source reads back), or a string.
func AppendJSONValue(dst []byte, col arrow.Array, t types.Type, i int) []byte {
	if col.IsNull(i) {
		return append(dst, "null"...)
	}
	switch c := col.(type) {
	case *array.Int64, *array.Boolean, *array.Decimal128:
		return AppendText(dst, col, t, i)
	case *array.Float64:
		start := len(dst)
		dst = AppendText(dst, c, t, i)
		if v := dst[start]; v == 'N' || v == 'I' || v == '-' && len(dst) > start+1 && dst[start+1] == 'I' {
			s := string(dst[start:])
			return AppendJSONString(dst[:start], s)
		}
		return dst
	case *array.String:
		if t.OID != types.OIDBpchar {
			return AppendJSONString(dst, c.Value(i))
		}
	}
	return AppendJSONString(dst, string(AppendText(nil, col, t, i)))
}

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, other text as it is.
func AppendJSONString(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		b, _ := json.Marshal(s) // invalid bytes as U+FFFD, as encoding/json does
		return append(dst, b...)
	}
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
