package records

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestEncodeAsPostgres: what the sinks write for each type, in text (CSV)
// and JSON, is PostgreSQL 15's COPY text output for the value: a real with a
// float4's digits (0.1, not the double holding it), a character(n) padded to
// n, a DATE as a date (not the timestamp holding it), a DECIMAL with its
// scale, a TIMESTAMPTZ in UTC with its zone; in JSON NaN is a string and a
// string's quotes and control characters are escaped. Expected texts are
// PostgreSQL's (SELECT ...::text for each value).
func TestEncodeAsPostgres(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues([]float64{float64(float32(0.1)), 0.1, math.NaN()}, nil)
	f := fb.NewArray()
	fb.Release()
	defer f.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"ab", "say \"hi\"\n\x01"}, nil)
	s := sb.NewArray()
	sb.Release()
	defer s.Release()
	const day = 86400 * 1_000_000
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	// 1994-01-01 is day 8766 since 1970-01-01; 2015-07-15 10:03:00.5 is 1436954580.5 s.
	tb.AppendValues([]arrow.Timestamp{8766 * day, 1436954580_500000}, nil)
	ts := tb.NewArray()
	tb.Release()
	defer ts.Release()
	db := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 12, Scale: 2})
	db.AppendValues([]decimal128.Num{decimal128.FromI64(123450), decimal128.FromI64(-5)}, nil)
	d := db.NewArray()
	db.Release()
	defer d.Release()
	tstz := types.TimestampType
	tstz.OID = types.OIDTimestamptz
	for _, c := range []struct {
		col      arrow.Array
		typ      types.Type
		i        int
		text, js string
	}{
		{f, types.Float4Type, 0, "0.1", "0.1"},
		{f, types.Float64Type, 0, "0.10000000149011612", "0.10000000149011612"},
		{f, types.Float64Type, 1, "0.1", "0.1"},
		{f, types.Float64Type, 2, "NaN", `"NaN"`},
		{s, types.BpcharType(3), 0, "ab ", `"ab "`},
		{s, types.VarcharType(3), 0, "ab", `"ab"`},
		{s, types.StringType, 1, "say \"hi\"\n\x01", `"say \"hi\"\n\u0001"`},
		{ts, types.DateType, 0, "1994-01-01", `"1994-01-01"`},
		{ts, types.TimestampType, 1, "2015-07-15 10:03:00.5", `"2015-07-15 10:03:00.5"`},
		{ts, tstz, 1, "2015-07-15 10:03:00.5+00", `"2015-07-15 10:03:00.5+00"`},
		{d, types.DecimalType(12, 2), 0, "1234.50", "1234.50"},
		{d, types.DecimalType(12, 2), 1, "-0.05", "-0.05"},
	} {
		if got := string(AppendText(nil, c.col, c.typ, c.i)); got != c.text {
			t.Errorf("%v row %d as text: got %q, want %q", c.typ, c.i, got, c.text)
		}
		if got := string(AppendJSONValue(nil, c.col, c.typ, c.i)); got != c.js {
			t.Errorf("%v row %d as JSON: got %s, want %s", c.typ, c.i, got, c.js)
		}
	}
}

// TestQuoteCSV: a field is quoted when it holds the delimiter, a quote, CR or
// LF, or is empty (an empty unquoted field is NULL); quotes inside doubled,
// as PostgreSQL's COPY ... CSV writes them.
func TestQuoteCSV(t *testing.T) {
	for _, c := range []struct {
		in    string
		delim byte
		want  string
	}{
		{"plain", ',', "plain"},
		{"", ',', `""`},
		{"a,b", ',', `"a,b"`},
		{"a,b", '|', "a,b"},
		{"a|b", '|', `"a|b"`},
		{`say "hi"`, ',', `"say ""hi"""`},
		{"two\nlines", ',', "\"two\nlines\""},
	} {
		dst := append([]byte("x,"), c.in...)
		if got := string(QuoteCSV(dst, 2, c.delim)[2:]); got != c.want {
			t.Errorf("QuoteCSV(%q, %q) = %s, want %s", c.in, c.delim, got, c.want)
		}
	}
}
