package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hummer-db/hummer/exec/types"
)

// TestNumericBinary checks numeric_send's encoding against numeric_recv's
// decoding, on values whose digit groups straddle the point.
func TestNumericBinary(t *testing.T) {
	for _, tc := range []struct {
		text  string
		scale int
	}{
		{"0.00", 2}, {"1.50", 2}, {"-12345.6789", 4}, {"10000", 0}, {"0.0001", 4}, {"-0.5", 1}, {"123456789012.30", 2},
	} {
		enc := appendNumeric(nil, []byte(tc.text), tc.scale)
		got, err := numericText(enc)
		if err != nil || got != tc.text {
			t.Errorf("%s: round trip gives %q, %v (encoded %x)", tc.text, got, err, enc)
		}
	}
}

// TestDecodeParamBinary decodes parameters that pgx's pgtype encodes in
// PostgreSQL's binary formats (its typsend functions), one for each type
// clients send, and text parameters of timestamptz with a zone.
func TestDecodeParamBinary(t *testing.T) {
	m := pgtype.NewMap()
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	var num pgtype.Numeric
	if err := num.Scan("-1234.5600"); err != nil {
		t.Fatal(err)
	}
	var uuid pgtype.UUID
	if err := uuid.Scan("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		oid   uint32
		value any
		want  types.Value
	}{
		{oidInt2, int16(-2), types.IntValue(-2)},
		{oidInt4, int32(-70000), types.IntValue(-70000)},
		{oidInt8, int64(1) << 40, types.IntValue(1 << 40)},
		{oidFloat4, float32(1.5), types.FloatValue(1.5)},
		{oidFloat8, -2.25, types.FloatValue(-2.25)},
		{oidBool, true, types.BoolValue(true)},
		{oidText, "héllo", types.StringValue("héllo")},
		{oidVarchar, "v", types.StringValue("v")},
		{oidBpchar, "c  ", types.StringValue("c  ")},
		{oidName, "n", types.StringValue("n")},
		{oidNumeric, num, types.StringValue("-1234.5600")},
		{oidDate, pgtype.Date{Time: day, Valid: true}, types.DateValue(day.UnixMicro())},
		{oidDate, pgtype.Date{Time: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), Valid: true}, types.DateValue(time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC).UnixMicro())},
		{oidTimestamp, pgtype.Timestamp{Time: ts, Valid: true}, types.TimestampValue(ts.UnixMicro())},
		{oidTimestamptz, ts.In(time.FixedZone("", 2*3600)), types.Value{Type: types.TimestamptzType, Int: ts.UnixMicro()}},
		{oidBytea, []byte{0, 0xff, '\\'}, types.Value{Type: types.ByteaType, Str: "\x00\xff\\"}},
		{oidInterval, pgtype.Interval{Months: 14, Days: -3, Microseconds: 3723500000, Valid: true}, types.Value{Type: types.IntervalType, Str: "1 year 2 mons -3 days +01:02:03.5"}},
		{oidJSON, `{"a": 1}`, types.StringValue(`{"a": 1}`)},
		{oidJSONB, `{"a": 1}`, types.StringValue(`{"a": 1}`)},
		{oidUUID, uuid, types.StringValue("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{oidOID, uint32(3000000000), types.IntValue(3000000000)},
	} {
		data, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		if err != nil {
			t.Fatalf("encoding %v as OID %d: %v", c.value, c.oid, err)
		}
		got, err := decodeParam(data, pgproto3.BinaryFormat, c.oid)
		if err != nil || got != c.want {
			t.Errorf("OID %d %v (%x): got %v, %v; want %v", c.oid, c.value, data, got, err, c.want)
		}
	}
	// Text timestamptz with a zone is its instant; without one, text for the cast.
	for _, c := range []struct {
		text string
		want types.Value
	}{
		{"2024-01-02 05:04:05.123456+02", types.Value{Type: types.TimestamptzType, Int: ts.UnixMicro()}},
		{"2024-01-02T03:04:05.123456Z", types.Value{Type: types.TimestamptzType, Int: ts.UnixMicro()}},
		{"2024-01-01 22:34:05.123456-04:30", types.Value{Type: types.TimestamptzType, Int: ts.UnixMicro()}},
		{"2024-01-02 03:04:05", types.StringValue("2024-01-02 03:04:05")},
	} {
		got, err := decodeParam([]byte(c.text), pgproto3.TextFormat, oidTimestamptz)
		if err != nil || got != c.want {
			t.Errorf("timestamptz %q: got %v, %v; want %v", c.text, got, err, c.want)
		}
	}
	// Wrong sizes and bad bytes are 22P03 and 22021.
	for _, c := range []struct {
		oid  uint32
		data []byte
		code string
	}{
		{oidInt4, []byte{0, 1}, "22P03"},
		{oidUUID, make([]byte, 15), "22P03"},
		{oidJSONB, []byte{2, '1'}, "22P03"},
		{oidText, []byte{0xff}, "22021"},
	} {
		_, err := decodeParam(c.data, pgproto3.BinaryFormat, c.oid)
		var pe *protoError
		if !errors.As(err, &pe) || pe.code != c.code {
			t.Errorf("OID %d %x: %v, want %s", c.oid, c.data, err, c.code)
		}
	}
}

// TestParamType: the OIDs clients declare in Parse, as the engine types them.
func TestParamType(t *testing.T) {
	for oid, want := range map[uint32]types.Type{
		0: types.NullType, oidUnknown: types.NullType, oidNumeric: types.NullType, 1007: types.NullType,
		oidInt2: types.Int64Type, oidInt4: types.Int64Type, oidInt8: types.Int64Type, oidFloat4: types.Float64Type,
		oidBool: types.BoolType, oidVarchar: types.StringType, oidUUID: types.StringType, oidDate: types.DateType,
		oidTimestamp: types.TimestampType, oidTimestamptz: types.TimestamptzType, oidBytea: types.ByteaType,
		oidName: types.NameType, oidChar: types.CharType, oidInterval: types.IntervalType,
	} {
		if got, err := paramType(oid); err != nil || got != want {
			t.Errorf("OID %d: %v %v, want %v", oid, got, err, want)
		}
	}
}
