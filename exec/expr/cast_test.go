package expr

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec/types"
)

func TestCast(t *testing.T) {
	s := col(0, tStr)
	runEvalTests(t, []evalTest{
		{name: "text to bigint", e: cast(s, tInt), cols: []column{strs(`[" 12 ", "+5", "-9223372036854775808", null]`)}, want: []string{"12", "5", "-9223372036854775808", "NULL"}},
		{name: "text to bigint bad", e: cast(s, tInt), cols: []column{strs(`["1", "abc"]`)}, err: `invalid input syntax for type bigint: "abc"`},
		{name: "text to bigint fraction", e: cast(s, tInt), cols: []column{strs(`["12.5"]`)}, err: `invalid input syntax for type bigint: "12.5"`},
		{name: "text to bigint empty", e: cast(s, tInt), cols: []column{strs(`[""]`)}, err: `invalid input syntax for type bigint: ""`},
		{name: "text to bigint range", e: cast(s, tInt), cols: []column{strs(`["99999999999999999999"]`)}, err: `value "99999999999999999999" is out of range for type bigint`},
		{name: "bad text in NULL row ignored", e: cast(s, tInt), cols: []column{strs(`["1", null]`)}, want: []string{"1", "NULL"}},
		{name: "text to double", e: cast(s, tF), cols: []column{strs(`["1.5e2", " NaN", "-Infinity", "0.1"]`)}, want: []string{"150", "CAST('NaN' AS double)", "CAST('-Infinity' AS double)", "0.1"}},
		{name: "text to double bad", e: cast(s, tF), cols: []column{strs(`["x"]`)}, err: `invalid input syntax for type double precision: "x"`},
		{name: "text to double range", e: cast(s, tF), cols: []column{strs(`["1e400"]`)}, err: `"1e400" is out of range for type double precision`},
		{name: "text to decimal", e: cast(s, dec(5, 2)), cols: []column{strs(`["1.005", "-1.005", "1e2", " .5 ", "5.", "-0.0", "999.994"]`)}, want: []string{"1.01", "-1.01", "100.00", "0.50", "5.00", "0.00", "999.99"}},
		{name: "text to decimal overflow", e: cast(s, dec(5, 2)), cols: []column{strs(`["1234.5"]`)}, err: "numeric field overflow"},
		{name: "text to decimal rounding overflow", e: cast(s, dec(5, 2)), cols: []column{strs(`["999.995"]`)}, err: "numeric field overflow"},
		{name: "text to decimal bad", e: cast(s, dec(5, 2)), cols: []column{strs(`["1.2.3"]`)}, err: `invalid input syntax for type numeric: "1.2.3"`},
		{name: "text to bool", e: cast(s, tBool), cols: []column{strs(`["yes", "of", "TRUE", "t", "0", " on ", "n"]`)}, want: []string{"TRUE", "FALSE", "TRUE", "TRUE", "FALSE", "TRUE", "FALSE"}},
		{name: "text to bool bad", e: cast(s, tBool), cols: []column{strs(`["o"]`)}, err: `invalid input syntax for type boolean: "o"`},
		{name: "text to timestamp", e: cast(s, tTS), cols: []column{strs(`["2020-01-02 03:04:05.5", "2020-01-02", "2020-01-02T03:04", " 2020-01-02  03:04:05.1234567 ", "0001-01-01", "2020-02-29 23:59:59.999999+02", "2020-01-02 +00", "2020-01-02 -05:30", "2020-01-02+02"]`)},
			// PostgreSQL: a date with a zone and no time is midnight, the zone ignored.
			want: []string{"TIMESTAMP '2020-01-02 03:04:05.5'", "TIMESTAMP '2020-01-02 00:00:00'", "TIMESTAMP '2020-01-02 03:04:00'", "TIMESTAMP '2020-01-02 03:04:05.123457'", "TIMESTAMP '0001-01-01 00:00:00'", "TIMESTAMP '2020-02-29 23:59:59.999999'",
				"TIMESTAMP '2020-01-02 00:00:00'", "TIMESTAMP '2020-01-02 00:00:00'", "TIMESTAMP '2020-01-02 00:00:00'"}},
		{name: "text to timestamp zone only bad", e: cast(s, tTS), cols: []column{strs(`["2020-01-02 +"]`)}, err: `invalid input syntax for type timestamp: "2020-01-02 +"`},
		{name: "text to timestamp minus after date bad", e: cast(s, tTS), cols: []column{strs(`["2020-01-02-05:30"]`)}, err: `invalid input syntax for type timestamp: "2020-01-02-05:30"`},
		{name: "text to timestamp bad", e: cast(s, tTS), cols: []column{strs(`["x"]`)}, err: `invalid input syntax for type timestamp: "x"`},
		{name: "text to timestamp month", e: cast(s, tTS), cols: []column{strs(`["2020-13-01"]`)}, err: `date/time field value out of range: "2020-13-01"`},
		{name: "text to timestamp day", e: cast(s, tTS), cols: []column{strs(`["2021-02-29"]`)}, err: `date/time field value out of range: "2021-02-29"`},

		{name: "double to bigint rounds half even", e: cast(col(0, tF), tInt), cols: []column{floats(`[2.5, 3.5, -2.5, 0.5, 1.5, null]`)}, want: []string{"2", "4", "-2", "0", "2", "NULL"}},
		{name: "double to bigint range", e: cast(col(0, tF), tInt), cols: []column{floats(`[1e20]`)}, err: "bigint out of range"},
		{name: "double NaN to bigint", e: cast(col(0, tF), tInt), cols: []column{floats(`["NaN"]`)}, err: "bigint out of range"},
		{name: "decimal to bigint rounds half away", e: cast(col(0, dec(3, 1)), tInt), cols: []column{decs(3, 1, `["2.5", "-2.5", "2.4"]`)}, want: []string{"3", "-3", "2"}},
		{name: "bigint to decimal", e: cast(col(0, tInt), dec(5, 2)), cols: []column{ints(`[123, -7, null]`)}, want: []string{"123.00", "-7.00", "NULL"}},
		{name: "bigint to decimal overflow", e: cast(col(0, tInt), dec(5, 2)), cols: []column{ints(`[1000]`)}, err: "numeric field overflow"},
		{name: "double to decimal", e: cast(col(0, tF), dec(5, 2)), cols: []column{floats(`[0.125, -0.125, 1.005]`)}, want: []string{"0.13", "-0.13", "1.01"}},
		{name: "double to decimal 15 digits", e: cast(col(0, tF), dec(38, 20)), cols: []column{floats(`[1.23456789012345678]`)}, want: []string{"1.23456789012346000000"}},
		{name: "double NaN to decimal", e: cast(col(0, tF), dec(5, 2)), cols: []column{floats(`["NaN"]`)}, err: "cannot convert NaN to numeric"},
		{name: "decimal to double", e: cast(col(0, dec(10, 3)), tF), cols: []column{decs(10, 3, `["12345.678", "-0.001"]`)}, want: []string{"12345.678", "-0.001"}},
		{name: "decimal rescale", e: cast(col(0, dec(5, 2)), dec(4, 1)), cols: []column{decs(5, 2, `["1.25", "-1.25", "1.24"]`)}, want: []string{"1.3", "-1.3", "1.2"}},
		{name: "decimal widen", e: cast(col(0, dec(5, 2)), dec(10, 4)), cols: []column{decs(5, 2, `["1.25"]`)}, want: []string{"1.2500"}},
		{name: "decimal narrow overflow", e: cast(col(0, dec(5, 2)), dec(3, 2)), cols: []column{decs(5, 2, `["12.50"]`)}, err: "numeric field overflow"},
		{name: "bigint to double", e: cast(col(0, tInt), tF), cols: []column{ints(`[3, -9007199254740993]`)}, want: []string{"3", "-9.007199254740992e+15"}},
		{name: "bigint to bool", e: cast(col(0, tInt), tBool), cols: []column{ints(`[3, 0, null]`)}, want: []string{"TRUE", "FALSE", "NULL"}},
		{name: "bool to bigint", e: cast(col(0, tBool), tInt), cols: []column{bools(`[true, false]`)}, want: []string{"1", "0"}},
		{name: "null to anything", e: cast(lNull(), tTS), cols: []column{ints(`[1, 2, 3]`)}, want: []string{"NULL", "NULL", "NULL"}},

		{name: "bool to text", e: cast(col(0, tBool), tStr), cols: []column{bools(`[true, false, null]`)}, want: []string{"'true'", "'false'", "NULL"}},
		{name: "double to text", e: cast(col(0, tF), tStr), cols: []column{floats(`[1e15, 1e14, 0.0001, 0.00001, 123.456, 1.5e300, 123456789012345678, -0.5]`)},
			want: []string{"'1e+15'", "'100000000000000'", "'0.0001'", "'1e-05'", "'123.456'", "'1.5e+300'", "'1.2345678901234568e+17'", "'-0.5'"}},
		{name: "decimal to text", e: cast(col(0, dec(5, 2)), tStr), cols: []column{decs(5, 2, `["1.50", "-0.05", "0"]`)}, want: []string{"'1.50'", "'-0.05'", "'0.00'"}},
		{name: "timestamp to text", e: cast(col(0, tTS), tStr), cols: []column{tss(`["2020-01-02 03:04:05.5", "1969-12-31 23:59:59.999999"]`)}, want: []string{"'2020-01-02 03:04:05.5'", "'1969-12-31 23:59:59.999999'"}},
		{name: "bigint to text", e: cast(col(0, tInt), tStr), cols: []column{ints(`[-42]`)}, want: []string{"'-42'"}},
	})
}

func TestFloatSum(t *testing.T) {
	// 0.1 + 0.2 prints as PostgreSQL prints it: every digit needed to read it back.
	v, err := EvalConst(cast(fn("+", lF(0.1), lF(0.2)), tStr))
	if err != nil || v.Str != "0.30000000000000004" {
		t.Fatalf("got %v, %v", v, err)
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    types.Value
		want string
	}{
		{types.NullValue(tInt), "NULL"},
		{types.NullValue(tNull), "NULL"},
		{types.BoolValue(true), "TRUE"},
		{types.IntValue(-3), "-3"},
		{types.FloatValue(2.5), "2.5"},
		{types.FloatValue(1e20), "1e+20"},
		{types.FloatValue(math.Inf(1)), "CAST('Infinity' AS double)"},
		{lDec("1.50", 5, 2).Value, "1.50"},
		{lDec("-0.5", 5, 3).Value, "-0.500"},
		{types.StringValue("it's"), "'it''s'"},
		{lTS("2020-01-02 03:04:05").Value, "TIMESTAMP '2020-01-02 03:04:05'"},
		{types.TimestampValue(-62135596800000000 - 86400000000), "TIMESTAMP '0001-12-31 00:00:00 BC'"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v); got != tt.want {
			t.Errorf("FormatValue(%+v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestEvalConst(t *testing.T) {
	v, err := EvalConst(fn("+", lInt(1), fn("*", lInt(2), lInt(3))))
	if err != nil || v != types.IntValue(7) {
		t.Errorf("1 + 2 * 3 = %+v, %v", v, err)
	}
	v, err = EvalConst(fn("upper", lStr("abc")))
	if err != nil || v.Str != "ABC" || v.Type != tStr {
		t.Errorf("upper('abc') = %+v, %v", v, err)
	}
	v, err = EvalConst(fn("+", lNull(), lInt(1)))
	if err != nil || !v.Null || v.Type != tInt {
		t.Errorf("NULL + 1 = %+v, %v", v, err)
	}
	v, err = EvalConst(cast(lStr("2020-01-02"), tTS))
	if err != nil || FormatValue(v) != "TIMESTAMP '2020-01-02 00:00:00'" {
		t.Errorf("CAST('2020-01-02' AS timestamp) = %+v, %v", v, err)
	}
	if _, err := EvalConst(fn("/", lInt(1), lInt(0))); !errors.Is(err, ErrDivisionByZero) {
		t.Errorf("1/0: %v", err)
	}
	if _, err := EvalConst(cast(lStr("abc"), tInt)); !errors.Is(err, ErrInvalidCast) {
		t.Errorf("'abc'::bigint: %v", err)
	}
	if _, err := EvalConst(col(0, tInt)); !errors.Is(err, ErrBadExpression) {
		t.Errorf("column: %v", err)
	}
}

// TestParseTimestampTZ: the zone's offset applied, by hand: 03:04:05+02 is
// 01:04:05 UTC, 03:04:05-05:30 is 08:34:05 UTC, no zone is UTC.
func TestParseTimestampTZ(t *testing.T) {
	for in, want := range map[string]string{
		"2024-01-02 03:04:05+02":    "2024-01-02T01:04:05Z",
		"2024-01-02 03:04:05-05:30": "2024-01-02T08:34:05Z",
		"2024-01-02 03:04:05":       "2024-01-02T03:04:05Z",
		"2024-01-02T23:30:00Z":      "2024-01-02T23:30:00Z",
	} {
		v, err := ParseTimestampTZ([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := time.UnixMicro(v).UTC().Format(time.RFC3339); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
