package wire

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// This file is PostgreSQL's binary format (the typsend and typreceive functions)
// for the types the extended protocol exchanges: result columns a client asks to
// receive in binary, and binary parameters.

// More type OIDs a client may declare for parameters.
const (
	oidInt2        = 21
	oidInt4        = 23
	oidFloat4      = 700
	oidVarchar     = 1043
	oidBpchar      = 1042
	oidName        = 19
	oidUnknown     = 705
	oidTimestamptz = 1184
	oidOID         = 26
	oidChar        = 18
	oidJSON        = 114
	oidJSONB       = 3802
	oidUUID        = 2950
	oidXML         = 142
	oidBytea       = 17
	oidInterval    = 1186
)

// pgEpochMicros is 2000-01-01 00:00:00 UTC, PostgreSQL's timestamp epoch, in Unix
// microseconds.
const pgEpochMicros = 946684800 * 1_000_000

// pgNaNBits and pgNaN4Bits are the float8 and float4 NaNs PostgreSQL sends.
const (
	pgNaNBits  = 0x7ff8000000000000
	pgNaN4Bits = 0x7fc00000
)

// binarySupported reports whether a column of type t can be sent in binary.
func binarySupported(t types.Type) bool {
	if t.OID == types.OIDRegclass {
		return false // regclass_send is the oid; the engine sends the name (sql: regclass)
	}
	switch t.ID {
	case types.Bool, types.Int64, types.Float64, types.String, types.Timestamp, types.Date, types.Decimal, types.Null:
		return true
	}
	return false
}

// binaryAppenderFor returns the appender of arr's values (of the column f) in
// binary format. The caller checks nulls and that binarySupported holds for
// the column's type.
func binaryAppenderFor(arr arrow.Array, f arrow.Field) textAppender {
	if a, ok := arr.(*array.Timestamp); ok && types.IsDate(f) {
		// A date: days since 2000-01-01, as int4.
		vs := a.Values()
		return func(dst []byte, i int) []byte {
			return binary.BigEndian.AppendUint32(dst, uint32(int32(floorDivInt64(int64(vs[i])-pgEpochMicros, microsPerDay))))
		}
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}
	case *array.Int64:
		vs := a.Int64Values()
		switch types.FieldOID(f) {
		case types.OIDInt2: // int2send
			return func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint16(dst, uint16(vs[i])) }
		case types.OIDInt4, types.OIDOid: // int4send, oidsend
			return func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint32(dst, uint32(vs[i])) }
		}
		return func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint64(dst, uint64(vs[i])) }
	case *array.Float64:
		vs := a.Float64Values()
		if types.FieldOID(f) == types.OIDFloat4 { // float4send
			return func(dst []byte, i int) []byte {
				if vs[i] != vs[i] {
					return binary.BigEndian.AppendUint32(dst, pgNaN4Bits)
				}
				return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(vs[i])))
			}
		}
		return func(dst []byte, i int) []byte {
			if vs[i] != vs[i] {
				// PostgreSQL's one NaN (get_float8_nan); Go's math.NaN() has
				// other bits.
				return binary.BigEndian.AppendUint64(dst, pgNaNBits)
			}
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(vs[i]))
		}
	case *array.Timestamp:
		vs := a.Values()
		return func(dst []byte, i int) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(int64(vs[i])-pgEpochMicros))
		}
	case *array.Decimal128:
		vs := a.Values()
		scale := int(a.DataType().(*arrow.Decimal128Type).Scale)
		var text []byte
		return func(dst []byte, i int) []byte {
			text = types.AppendDecimal(text[:0], vs[i], scale)
			return appendNumeric(dst, text, scale)
		}
	case *array.String:
		if types.FieldOID(f) == types.OIDInterval {
			return intervalSend(a)
		}
		if types.FieldOID(f) == types.OIDBpchar && types.FieldLen(f) > 0 {
			return appenderFor(arr, f, nil) // bpcharsend: the padded text
		}
		// Text, name, "char": the bytes of the text; bytea: its bytes.
		offs, data := a.ValueOffsets(), a.ValueBytes()
		base := offs[0]
		return func(dst []byte, i int) []byte { return append(dst, data[offs[i]-base:offs[i+1]-base]...) }
	}
	// Text (and the null type, whose rows are all NULL): the bytes of the text.
	return appenderFor(arr, f, nil)
}

// appendNumeric appends numeric_send's encoding of a decimal's text (an optional
// minus, digits, and scale digits after a point): the number of base-10000 digits,
// the weight of the first, the sign, the display scale, then the digits.
func appendNumeric(dst, text []byte, scale int) []byte {
	sign := uint16(0)
	if len(text) > 0 && text[0] == '-' {
		sign, text = 0x4000, text[1:]
	}
	intPart, frac := string(text), ""
	if k := strings.IndexByte(intPart, '.'); k >= 0 {
		intPart, frac = intPart[:k], intPart[k+1:]
	}
	intPart = strings.TrimLeft(intPart, "0")
	// Pad both parts to whole groups of four decimal digits.
	intPart = strings.Repeat("0", (4-len(intPart)%4)%4) + intPart
	frac += strings.Repeat("0", (4-len(frac)%4)%4)
	digits := make([]uint16, 0, (len(intPart)+len(frac))/4)
	for s := intPart + frac; len(s) > 0; s = s[4:] {
		d, _ := strconv.Atoi(s[:4])
		digits = append(digits, uint16(d))
	}
	weight := len(intPart)/4 - 1
	for len(digits) > 0 && digits[0] == 0 {
		digits, weight = digits[1:], weight-1
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, 0
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(digits)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(scale))
	for _, d := range digits {
		dst = binary.BigEndian.AppendUint16(dst, d)
	}
	return dst
}

// decodeParam turns a Bind parameter into a value: nil is NULL, text stays text
// (the session parses it by the parameter's type), and binary is decoded by the
// parameter's type OID.
func decodeParam(data []byte, format int16, oid uint32) (types.Value, error) {
	if data == nil {
		return types.NullValue(types.NullType), nil
	}
	if format == pgproto3.TextFormat {
		if !utf8.Valid(data) {
			return types.Value{}, protoErrorf("22021", "invalid byte sequence for encoding \"UTF8\"")
		}
		if oid == oidTimestamptz {
			if micros, ok := timestamptzText(string(data)); ok {
				return types.Value{Type: types.TimestamptzType, Int: micros}, nil
			}
		}
		return types.StringValue(string(data)), nil
	}
	size := func(n int) error {
		if len(data) != n {
			return protoErrorf("22P03", "incorrect binary data format in bind parameter: %d bytes for a type of %d", len(data), n)
		}
		return nil
	}
	switch oid {
	case oidInt8:
		if err := size(8); err != nil {
			return types.Value{}, err
		}
		return types.IntValue(int64(binary.BigEndian.Uint64(data))), nil
	case oidInt4:
		if err := size(4); err != nil {
			return types.Value{}, err
		}
		return types.IntValue(int64(int32(binary.BigEndian.Uint32(data)))), nil
	case oidInt2:
		if err := size(2); err != nil {
			return types.Value{}, err
		}
		return types.IntValue(int64(int16(binary.BigEndian.Uint16(data)))), nil
	case oidFloat8:
		if err := size(8); err != nil {
			return types.Value{}, err
		}
		return types.FloatValue(math.Float64frombits(binary.BigEndian.Uint64(data))), nil
	case oidFloat4:
		if err := size(4); err != nil {
			return types.Value{}, err
		}
		return types.FloatValue(float64(math.Float32frombits(binary.BigEndian.Uint32(data)))), nil
	case oidBool:
		if err := size(1); err != nil {
			return types.Value{}, err
		}
		return types.BoolValue(data[0] != 0), nil
	case oidTimestamp, oidTimestamptz:
		if err := size(8); err != nil {
			return types.Value{}, err
		}
		v := types.TimestampValue(int64(binary.BigEndian.Uint64(data)) + pgEpochMicros)
		if oid == oidTimestamptz {
			v.Type = types.TimestamptzType
		}
		return v, nil
	case oidBytea:
		return types.Value{Type: types.ByteaType, Str: string(data)}, nil
	case oidInterval:
		// interval_send: microseconds (int8), days (int4), months (int4).
		if err := size(16); err != nil {
			return types.Value{}, err
		}
		us, days, months := int64(binary.BigEndian.Uint64(data)), int32(binary.BigEndian.Uint32(data[8:])), int32(binary.BigEndian.Uint32(data[12:]))
		return types.Value{Type: types.IntervalType, Str: string(types.AppendInterval(nil, months, days, us))}, nil
	case oidDate:
		if err := size(4); err != nil {
			return types.Value{}, err
		}
		return types.DateValue(int64(int32(binary.BigEndian.Uint32(data)))*microsPerDay + pgEpochMicros), nil
	case oidText, oidVarchar, oidBpchar, oidName, oidUnknown, oidJSON, oidXML, oidChar:
		if !utf8.Valid(data) {
			return types.Value{}, protoErrorf("22021", "invalid byte sequence for encoding \"UTF8\"")
		}
		return types.StringValue(string(data)), nil
	case oidJSONB:
		// jsonb_send: a version byte, 1, then the text.
		if len(data) == 0 || data[0] != 1 {
			return types.Value{}, protoErrorf("22P03", "unsupported jsonb version number")
		}
		if !utf8.Valid(data[1:]) {
			return types.Value{}, protoErrorf("22021", "invalid byte sequence for encoding \"UTF8\"")
		}
		return types.StringValue(string(data[1:])), nil
	case oidUUID:
		// uuid_send: the 16 bytes; the engine keeps a uuid as its text.
		if err := size(16); err != nil {
			return types.Value{}, err
		}
		h := hex.EncodeToString(data)
		return types.StringValue(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]), nil
	case oidOID:
		if err := size(4); err != nil {
			return types.Value{}, err
		}
		return types.IntValue(int64(binary.BigEndian.Uint32(data))), nil
	case oidNumeric:
		s, err := numericText(data)
		if err != nil {
			return types.Value{}, err
		}
		return types.StringValue(s), nil
	}
	return types.Value{}, protoErrorf(codeFeatureNotSupported, "binary parameters of type OID %d are not supported", oid)
}

// timestampLayouts are the forms of timestamptz text with a zone that clients
// send: PostgreSQL's output (+02, +05:30, +00:00:00), ISO 8601 (T, Z).
var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00:00",
	"2006-01-02T15:04:05.999999999Z07", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z07:00:00",
}

// timestamptzText reads the text of a timestamptz parameter that carries a
// zone as its instant, in microseconds since the Unix epoch (the engine's
// timestamps are UTC, its TimeZone). Text without a zone is not read here:
// the cast from text reads it, in UTC as PostgreSQL would with TimeZone UTC.
func timestamptzText(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Unix()*1_000_000 + int64(t.Nanosecond()+500)/1000, true
		}
	}
	return 0, false
}

// numericText decodes numeric_send's format into numeric text, which the session
// parses with the cast to the parameter's decimal type.
func numericText(data []byte) (string, error) {
	bad := protoErrorf("22P03", "invalid binary numeric parameter")
	if len(data) < 8 {
		return "", bad
	}
	n := int(binary.BigEndian.Uint16(data))
	weight := int(int16(binary.BigEndian.Uint16(data[2:])))
	sign := binary.BigEndian.Uint16(data[4:])
	scale := int(binary.BigEndian.Uint16(data[6:]))
	if len(data) != 8+2*n {
		return "", bad
	}
	switch sign {
	case 0xC000:
		return "NaN", nil
	case 0xD000:
		return "Infinity", nil
	case 0xF000:
		return "-Infinity", nil
	}
	var sb strings.Builder
	if sign == 0x4000 {
		sb.WriteByte('-')
	}
	digit := func(k int) int { // the k-th base-10000 digit, of weight weight-k; 0 past the end
		if k < 0 || k >= n {
			return 0
		}
		return int(binary.BigEndian.Uint16(data[8+2*k:]))
	}
	// Integer part: the digits of weight weight down to 0.
	if weight < 0 {
		sb.WriteByte('0')
	} else {
		for w := 0; w <= weight; w++ {
			d := digit(w)
			if w == 0 {
				sb.WriteString(strconv.Itoa(d))
			} else {
				sb.WriteString(pad4(d))
			}
		}
	}
	if scale > 0 {
		var frac strings.Builder
		for k := weight + 1; frac.Len() < scale; k++ {
			frac.WriteString(pad4(digit(k)))
		}
		sb.WriteByte('.')
		sb.WriteString(frac.String()[:scale])
	}
	return sb.String(), nil
}

func pad4(d int) string {
	s := strconv.Itoa(d)
	return strings.Repeat("0", 4-len(s)) + s
}

// microsPerDay is a day in microseconds.
const microsPerDay = 86400 * 1_000_000

// floorDivInt64 is a / b rounded down.
func floorDivInt64(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// intervalSend returns the appender of interval_send's encoding of the
// intervals of a, held as their text.
func intervalSend(a *array.String) textAppender {
	return func(dst []byte, i int) []byte {
		months, days, us, err := expr.ParseInterval([]byte(a.Value(i)))
		if err != nil { // not from a cast: the engine's text is always an interval's
			months, days, us = 0, 0, 0
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(us))
		dst = binary.BigEndian.AppendUint32(dst, uint32(days))
		return binary.BigEndian.AppendUint32(dst, uint32(months))
	}
}
