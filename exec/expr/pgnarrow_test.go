package expr

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestNarrowCasts: casts to the declared widths and lengths keep, cut or
// refuse values as PostgreSQL 15's casts do (its answers for the same
// casts, by psql).
func TestNarrowCasts(t *testing.T) {
	for _, c := range []struct {
		v    types.Value
		to   types.Type
		want string // the value's text, or the error's message
		err  error
	}{
		{types.IntValue(32767), types.Int2Type, "32767", nil},
		{types.IntValue(32768), types.Int2Type, "smallint out of range", ErrOutOfRange},
		{types.IntValue(-2147483648), types.Int4Type, "-2147483648", nil},
		{types.IntValue(2147483648), types.Int4Type, "integer out of range", ErrOutOfRange},
		{types.IntValue(-1), types.OidType, "4294967295", nil},
		{types.IntValue(4294967296), types.OidType, "OID out of range", ErrOutOfRange},
		{types.StringValue(" 70000 "), types.Int2Type, `value " 70000 " is out of range for type smallint`, ErrOutOfRange},
		{types.FloatValue(2.5), types.Int4Type, "2", nil}, // rounds half to even, as int4(float8) does
		{types.FloatValue(0.1), types.Float4Type, "0.1", nil},
		{types.FloatValue(1e39), types.Float4Type, "value out of range: overflow", ErrOutOfRange},
		{types.FloatValue(1e-46), types.Float4Type, "value out of range: underflow", ErrOutOfRange},
		{types.StringValue("abcde   "), types.VarcharType(5), "abcde", nil},
		{types.StringValue("abcdef"), types.VarcharType(5), "value too long for type character varying(5)", ErrTooLong},
		{types.StringValue("héllo"), types.VarcharType(5), "héllo", nil}, // characters, not bytes
		{types.StringValue("ab "), types.BpcharType(3), "ab", nil},       // held without its blanks
		{types.StringValue("abcd"), types.BpcharType(3), "value too long for type character(3)", ErrTooLong},
	} {
		got, err := EvalConst(Cast(Literal(c.v), c.to))
		switch {
		case c.err != nil:
			if !errors.Is(err, c.err) || err.Error() != c.want {
				t.Errorf("CAST(%s AS %s): %v, want %s", FormatValue(c.v), c.to, err, c.want)
			}
		case err != nil:
			t.Errorf("CAST(%s AS %s): %v", FormatValue(c.v), c.to, err)
		default:
			text, err := EvalConst(Cast(Literal(got), types.StringType))
			if err != nil || text.Str != c.want {
				t.Errorf("CAST(%s AS %s) = %q (%v), want %q", FormatValue(c.v), c.to, text.Str, err, c.want)
			}
		}
	}
}

// TestNarrowIgnoresNullSlots: a NULL row's slot, whatever it holds, is not
// range-checked.
func TestNarrowIgnoresNullSlots(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 1 << 40, 2}, []bool{true, false, true})
	a := b.NewArray()
	b.Release()
	defer a.Release()
	out, err := castArray(a, types.Int64Type, types.Int4Type, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.NullN() != 1 || out.(*array.Int64).Value(2) != 2 {
		t.Errorf("got %v", out)
	}
}
