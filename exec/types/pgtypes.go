package types

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// PostgreSQL types the engine holds as one of its own types (Type.OID): what
// the engine computes with them is what it computes with the type holding
// them; their input and output (casts, the wire) are PostgreSQL's.
//
//   - name and "char" are text: the catalog's columns PostgreSQL declares so
//     (pg_class.relname, relkind, ...), which clients decode by type OID.
//   - regclass is a bigint, the oid; the binder prints it as the relation's name.
//   - timestamp with time zone is a timestamp: the instant in UTC; its text
//     is the wall time in the session's TimeZone (zone.go).
//   - bytea is text holding the bytes as they are (Go strings hold any bytes);
//     its text form is PostgreSQL's hex format.
//   - interval is text: its PostgreSQL output (AppendInterval), which casts
//     normalise it to; arithmetic with timestamps reads it (exec/expr), and
//     intervals compare as that text (equal text, equal interval), not by
//     length.
//   - smallint, integer and oid are bigints, real a double holding a float4's
//     value: a column declared so is described to clients as PostgreSQL
//     describes it and sent in its width; casts to it check its range
//     (exec/expr's narrowing), so that every value it holds fits.
//   - character varying(n) and character(n) are text no longer than n
//     characters (Type.Len); a character(n) is held without its trailing
//     blanks, which PostgreSQL ignores in every use but output, where the
//     wire pads it back to n.
const (
	OIDBytea       uint32 = 17
	OIDChar        uint32 = 18
	OIDName        uint32 = 19
	OIDInt2        uint32 = 21
	OIDInt4        uint32 = 23
	OIDOid         uint32 = 26
	OIDFloat4      uint32 = 700
	OIDBpchar      uint32 = 1042
	OIDVarchar     uint32 = 1043
	OIDTimestamptz uint32 = 1184
	OIDInterval    uint32 = 1186
	OIDRegclass    uint32 = 2205
)

// The types held as another (see OIDBytea).
var (
	ByteaType       = Type{ID: String, OID: OIDBytea}
	CharType        = Type{ID: String, OID: OIDChar}
	NameType        = Type{ID: String, OID: OIDName}
	TimestamptzType = Type{ID: Timestamp, OID: OIDTimestamptz}
	RegclassType    = Type{ID: Int64, OID: OIDRegclass}
	IntervalType    = Type{ID: String, OID: OIDInterval}
	Int2Type        = Type{ID: Int64, OID: OIDInt2}
	Int4Type        = Type{ID: Int64, OID: OIDInt4}
	OidType         = Type{ID: Int64, OID: OIDOid}
	Float4Type      = Type{ID: Float64, OID: OIDFloat4}
)

// VarcharType returns character varying(n); n <= 0 is character varying
// without a length.
func VarcharType(n int) Type { return Type{ID: String, OID: OIDVarchar, Len: int32(max(n, 0))} }

// BpcharType returns character(n); n <= 0 is bpchar without a length (of
// any length, as PostgreSQL's).
func BpcharType(n int) Type { return Type{ID: String, OID: OIDBpchar, Len: int32(max(n, 0))} }

// pgTypeNames are the held types' names as PostgreSQL's format_type prints them.
var pgTypeNames = map[uint32]string{OIDBytea: "bytea", OIDChar: `"char"`, OIDName: "name",
	OIDTimestamptz: "timestamp with time zone", OIDRegclass: "regclass", OIDInterval: "interval",
	OIDInt2: "smallint", OIDInt4: "integer", OIDOid: "oid", OIDFloat4: "real",
	OIDBpchar: "character", OIDVarchar: "character varying"}

// Narrow reports whether t is a narrower form of its holding type (a
// smallint, integer, oid, real, character varying or character), whose
// values every use of the holding type takes as they are.
func (t Type) Narrow() bool {
	switch t.OID {
	case OIDInt2, OIDInt4, OIDOid, OIDFloat4, OIDVarchar, OIDBpchar:
		return true
	}
	return false
}

// IntRange returns the least and greatest values of the integer type t, and
// false for a type that is not a narrower integer.
func (t Type) IntRange() (lo, hi int64, ok bool) {
	switch t.OID {
	case OIDInt2:
		return math.MinInt16, math.MaxInt16, true
	case OIDInt4:
		return math.MinInt32, math.MaxInt32, true
	case OIDOid:
		return 0, math.MaxUint32, true
	}
	return 0, 0, false
}

// pgMetadata marks the Arrow fields of columns of the held types, as
// dateMetadata does DATE's.
var pgMetadata = map[uint32]arrow.Metadata{}

func init() {
	for oid := range pgTypeNames {
		pgMetadata[oid] = arrow.NewMetadata([]string{"hummer.type"}, []string{strconv.FormatUint(uint64(oid), 10)})
	}
}

// Base returns the engine's own type that holds t: t without its OID and
// length.
func (t Type) Base() Type {
	t.OID, t.Len = 0, 0
	return t
}

// FieldLen returns the declared length of the column of the Arrow field f
// (Type.Len), 0 for none.
func FieldLen(f arrow.Field) int {
	v, ok := f.Metadata.GetValue("hummer.len")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

// AppendFloat4 appends the float4 value v (a double holding a float4's
// value) as PostgreSQL 15's float4out prints it: AppendFloat's form with a
// float4's shortest digits, in exponent form outside 1e-4 <= |v| < 1e6.
func AppendFloat4(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return AppendFloat(dst, v)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'e', -1, 32)
	if exp := exponent(dst[start:]); exp < -4 || exp >= 6 {
		return dst
	}
	return strconv.AppendFloat(dst[:start], v, 'f', -1, 32)
}

// AppendBpchar appends the character(n) value s padded with blanks to n
// characters, as PostgreSQL holds and prints it.
func AppendBpchar(dst []byte, s string, n int) []byte {
	dst = append(dst, s...)
	for c := utf8.RuneCountInString(s); c < n; c++ {
		dst = append(dst, ' ')
	}
	return dst
}

// FieldOID returns the OID of the held type of the Arrow field f of a
// column (Schema.Arrow), 0 for the engine's own types.
func FieldOID(f arrow.Field) uint32 {
	v, ok := f.Metadata.GetValue("hummer.type")
	if !ok {
		return 0
	}
	oid, _ := strconv.ParseUint(v, 10, 32)
	return uint32(oid)
}

// AppendTimestamptz appends microseconds since the epoch as PostgreSQL prints
// a timestamp with time zone in the time zone UTC: the timestamp, then +00.
func AppendTimestamptz(dst []byte, micros int64) []byte {
	dst = AppendTimestamp(dst, micros)
	if micros == math.MaxInt64 || micros == math.MinInt64 {
		return dst // infinity has no zone
	}
	if l := len(dst); bytes.HasSuffix(dst, []byte(" BC")) {
		return append(append(dst[:l-3], "+00"...), " BC"...) // 0001-01-01 00:00:00+00 BC
	}
	return append(dst, "+00"...)
}

// AppendBytea appends b in PostgreSQL's hex output format for bytea: \x and
// two lower-case hex digits a byte.
func AppendBytea(dst []byte, b string) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, '\\', 'x')
	for i := 0; i < len(b); i++ {
		dst = append(dst, digits[b[i]>>4], digits[b[i]&15])
	}
	return dst
}

// MarshalJSON writes v as its fields, except that a bytea's bytes that are
// not UTF-8, which a JSON string cannot hold, go as base64.
func (v Value) MarshalJSON() ([]byte, error) {
	type plain Value
	if v.Type.OID != OIDBytea || utf8.ValidString(v.Str) {
		return json.Marshal(plain(v))
	}
	return json.Marshal(struct {
		plain
		Str   string `json:"str,omitempty"` // shadows plain's
		Bytes []byte `json:"bytes"`
	}{plain: plain(v), Bytes: []byte(v.Str)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Value) UnmarshalJSON(data []byte) error {
	type plain Value
	var w struct {
		plain
		Bytes []byte `json:"bytes"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*v = Value(w.plain)
	if w.Bytes != nil {
		v.Str = string(w.Bytes)
	}
	return nil
}

// AppendInterval appends an interval of months, days and microseconds as
// PostgreSQL prints it with IntervalStyle postgres (EncodeInterval): years,
// mons and days, each when not 0 (plural but for 1; + before a positive
// part after a negative one), then the time as [-]HH:MM:SS[.ffffff] when
// not 0 or when nothing came before.
func AppendInterval(dst []byte, months, days int32, micros int64) []byte {
	zero, before := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !zero {
			dst = append(dst, ' ')
		}
		if before && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		before, zero = v < 0, false
	}
	part(int64(months/12), "year")
	part(int64(months%12), "mon")
	part(int64(days), "day")
	if !zero && micros == 0 {
		return dst
	}
	if !zero {
		dst = append(dst, ' ')
	}
	if micros < 0 {
		dst = append(dst, '-')
	} else if before {
		dst = append(dst, '+')
	}
	u := uint64(micros)
	if micros < 0 {
		u = uint64(-micros)
	}
	h, rest := u/3600e6, u%3600e6
	m, rest := rest/60e6, rest%60e6
	s, frac := rest/1e6, rest%1e6
	if h < 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendUint(dst, h, 10)
	dst = append(dst, ':')
	dst = appendPadded(dst, int(m), 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, int(s), 2)
	if frac != 0 {
		digits := 6
		for frac%10 == 0 {
			frac /= 10
			digits--
		}
		dst = append(dst, '.')
		dst = appendPadded(dst, int(frac), digits)
	}
	return dst
}
