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
const (
	OIDBytea       uint32 = 17
	OIDChar        uint32 = 18
	OIDName        uint32 = 19
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
)

// pgTypeNames are the held types' names as PostgreSQL's format_type prints them.
var pgTypeNames = map[uint32]string{OIDBytea: "bytea", OIDChar: `"char"`, OIDName: "name",
	OIDTimestamptz: "timestamp with time zone", OIDRegclass: "regclass", OIDInterval: "interval"}

// pgMetadata marks the Arrow fields of columns of the held types, as
// dateMetadata does DATE's.
var pgMetadata = map[uint32]arrow.Metadata{}

func init() {
	for oid := range pgTypeNames {
		pgMetadata[oid] = arrow.NewMetadata([]string{"hummer.type"}, []string{strconv.FormatUint(uint64(oid), 10)})
	}
}

// Base returns the engine's own type that holds t: t without its OID.
func (t Type) Base() Type {
	t.OID = 0
	return t
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
