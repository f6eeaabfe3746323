package wire

import (
	"math"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// The expected strings below were printed by a PostgreSQL 15 server (psql -A -t)
// for the same values.

func TestAppendTextFloat8(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{1e20, "1e+20"},
		{0.1, "0.1"},
		{100, "100"},
		{1.5e-07, "1.5e-07"},
		{1e15, "1e+15"},
		{1e14, "100000000000000"},
		{123456789012345678, "1.2345678901234568e+17"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{math.NaN(), "NaN"},
		{math.Copysign(0, -1), "-0"},
		{0, "0"},
		{1e100, "1e+100"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{123.456, "123.456"},
		{2.5e-5, "2.5e-05"},
		{add(0.1, 0.2), "0.30000000000000004"},
		{999999999999999.9, "999999999999999.9"},
		{-1e-4, "-0.0001"},
		{1 << 53, "9.007199254740992e+15"},
		{-123.456e-10, "-1.23456e-08"},
		{1e15 - 1, "999999999999999"},
		{mul(1.0e-4, 0.99), "9.900000000000001e-05"},
		{3.14159, "3.14159"},
	} {
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		b.Append(tc.v)
		arr := b.NewArray()
		if got := string(AppendText(nil, arr, arrow.Field{}, 0)); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.v, got, tc.want)
		}
		arr.Release()
		b.Release()
	}
}

// add and mul compute at run time in float64, as PostgreSQL did, where constant
// expressions would be exact.
func add(a, b float64) float64 { return a + b }
func mul(a, b float64) float64 { return a * b }

func TestAppendTextNumeric(t *testing.T) {
	for _, tc := range []struct {
		unscaled string
		p, s     int32
		want     string
	}{
		{"12345678901234567890123456780123456789", 38, 10, "1234567890123456789012345678.0123456789"},
		{"-99999999999999999999999999999999999999", 38, 0, "-99999999999999999999999999999999999999"},
		{"0", 5, 2, "0.00"},
		{"5", 10, 3, "0.005"},
		{"18446744073709551616", 38, 0, "18446744073709551616"},
		{"-5", 3, 1, "-0.5"},
		{"10000000000000000000", 38, 0, "10000000000000000000"},
		{"12", 5, 0, "12"},
		{"-150", 10, 2, "-1.50"},
	} {
		n, ok := new(big.Int).SetString(tc.unscaled, 10)
		if !ok {
			t.Fatal(tc.unscaled)
		}
		b := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: tc.p, Scale: tc.s})
		b.Append(decimal128.FromBigInt(n))
		arr := b.NewArray()
		if got := string(AppendText(nil, arr, arrow.Field{}, 0)); got != tc.want {
			t.Errorf("%s scale %d: got %q, want %q", tc.unscaled, tc.s, got, tc.want)
		}
		arr.Release()
		b.Release()
	}
}

func TestAppendTextTimestamp(t *testing.T) {
	for _, tc := range []struct {
		micros int64
		want   string
	}{
		{-1, "1969-12-31 23:59:59.999999"},
		{-62135596800000000, "0001-01-01 00:00:00"},
		{-62135596800500000, "0001-12-31 23:59:59.5 BC"},
		{253402300800000000, "10000-01-01 00:00:00"},
		{-210866803200000000, "4714-11-24 00:00:00 BC"},
		{1709208000000001, "2024-02-29 12:00:00.000001"},
		{946684799990000, "1999-12-31 23:59:59.99"},
		{1704164645120000, "2024-01-02 03:04:05.12"},
		{math.MaxInt64, "infinity"},
		{math.MinInt64, "-infinity"},
	} {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond})
		b.Append(arrow.Timestamp(tc.micros))
		arr := b.NewArray()
		if got := string(AppendText(nil, arr, arrow.Field{}, 0)); got != tc.want {
			t.Errorf("%d: got %q, want %q", tc.micros, got, tc.want)
		}
		arr.Release()
		b.Release()
	}
}

func TestAppendTextOthers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	check := func(arr arrow.Array, want ...string) {
		t.Helper()
		defer arr.Release()
		for i, w := range want {
			got := string(AppendText([]byte("prefix"), arr, arrow.Field{}, i))
			if w == "NULL" {
				if !IsNull(arr, i) || got != "prefix" {
					t.Errorf("%v row %d: IsNull %v, text %q", arr.DataType(), i, IsNull(arr, i), got)
				}
				continue
			}
			if got != "prefix"+w {
				t.Errorf("%v row %d: got %q, want %q", arr.DataType(), i, got, "prefix"+w)
			}
		}
	}
	bb := array.NewBooleanBuilder(mem)
	bb.AppendValues([]bool{true, false}, nil)
	bb.AppendNull()
	check(bb.NewArray(), "t", "f", "NULL")
	bb.Release()

	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{0, -42, math.MaxInt64}, nil)
	check(ib.NewArray(), "0", "-42", "9223372036854775807")
	ib.Release()

	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"", "a\tb\nc", "日本"}, nil)
	sb.AppendNull()
	check(sb.NewArray(), "", "a\tb\nc", "日本", "NULL")
	// A slice of a column (as a LIMIT or a split batch makes): its values
	// start at an offset into the column's bytes.
	sb.AppendValues([]string{"skipped", "one", "two"}, nil)
	whole := sb.NewArray()
	check(array.NewSlice(whole, 1, 3), "one", "two")
	whole.Release()
	sb.Release()

	nb := array.NewNullBuilder(mem)
	nb.AppendNull()
	check(nb.NewArray(), "NULL")
	nb.Release()

}

// The row encoder must not allocate per value.
func TestAppendTextNoAllocs(t *testing.T) {
	mem := memory.DefaultAllocator
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues([]float64{1.5e-07, 123.456, 1e20}, nil)
	farr := fb.NewArray()
	defer farr.Release()
	db := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 4})
	db.Append(decimal128.FromI64(-123456789))
	darr := db.NewArray()
	defer darr.Release()
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	tb.Append(1704164645120000)
	tarr := tb.NewArray()
	defer tarr.Release()

	buf := make([]byte, 0, 4096)
	for _, arr := range []arrow.Array{farr, darr, tarr} {
		app := appenderFor(arr, arrow.Field{}, nil)
		allocs := testing.AllocsPerRun(100, func() {
			buf = buf[:0]
			for i := range arr.Len() {
				buf = app(buf, i)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per run", arr.DataType(), allocs)
		}
	}
}

func BenchmarkAppendTextFloat64(b *testing.B) {
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	for i := range 1024 {
		fb.Append(float64(i) * 1.37)
	}
	arr := fb.NewArray()
	defer arr.Release()
	app := appenderFor(arr, arrow.Field{}, nil)
	buf := make([]byte, 0, 64<<10)
	b.ResetTimer()
	for b.Loop() {
		buf = buf[:0]
		for i := range 1024 {
			buf = app(buf, i)
		}
	}
}

// BenchmarkSendBatch measures encoding DataRows of a typical batch.
func BenchmarkSendBatch(b *testing.B) {
	mem := memory.DefaultAllocator
	schema := types.Schema{{Name: "n", Type: types.Int64Type}, {Name: "f", Type: types.Float64Type}, {Name: "s", Type: types.StringType}}
	rows := make([][]any, 1024)
	for i := range rows {
		rows[i] = []any{int64(i * 7919), float64(i) / 3, "word"}
	}
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	for _, row := range rows {
		rb.Field(0).(*array.Int64Builder).Append(row[0].(int64))
		rb.Field(1).(*array.Float64Builder).Append(row[1].(float64))
		rb.Field(2).(*array.StringBuilder).Append(row[2].(string))
	}
	batch := rb.NewRecordBatch()
	defer batch.Release()
	c := &conn{}
	b.ReportAllocs()
	for b.Loop() {
		c.out = c.out[:0]
		if err := c.sendBatch(batch, 3, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(c.out)))
}
