package expr

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

func TestCatalogHasKernels(t *testing.T) {
	for name := range catalog {
		if k, _ := kernelFor(name); k == nil {
			t.Errorf("function %q resolves but has no kernel", name)
		}
	}
}

// Trees that break the binder's contract fail with ErrBadExpression, never a panic.
func TestEvalContract(t *testing.T) {
	tests := []struct {
		name string
		e    *Expr
	}{
		{"missing cast", Call("+", tInt, col(0, tInt), lF(1))},
		{"wrong result type", Call("+", tF, col(0, tInt), col(0, tInt))},
		{"column out of range", col(3, tInt)},
		{"column of another type", col(0, tStr)},
		{"decimal column of another scale", col(1, dec(10, 3))},
		{"parameter", &Expr{Kind: KindParam, Param: 1, Type: tInt}},
		{"unknown kind", &Expr{Kind: "bogus", Type: tInt}},
		{"literal of another type", &Expr{Kind: KindLiteral, Type: tInt, Value: types.StringValue("x")}},
		{"impossible cast", cast(col(0, tInt), tTS)},
		{"IN literal of another type", Call("in", tBool, col(0, tInt), &Expr{Kind: KindLiteral, Type: tInt, Value: types.StringValue("x")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := makeBatch(t, mem, ints(`[1, 2]`), decs(10, 2, `["1.00", "2.00"]`))
			defer b.Release()
			got, err := Eval(tt.e, b, mem)
			if err == nil {
				got.Release()
				t.Fatalf("%s: no error", tt.e)
			}
			if !errors.Is(err, ErrBadExpression) {
				t.Fatalf("%s: %v, want ErrBadExpression", tt.e, err)
			}
		})
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := makeBatch(t, mem, ints(`[1]`))
	defer b.Release()
	if _, err := Eval(Call("nosuch", tInt), b, mem); !errors.Is(err, ErrUnknownFunction) {
		t.Errorf("unknown function: %v", err)
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		e    *Expr
		kind error
	}{
		{fn("/", lInt(1), lInt(0)), ErrDivisionByZero},
		{fn("+", lInt(1<<62), lInt(1<<62)), ErrOutOfRange},
		{cast(lStr("x"), tInt), ErrInvalidCast},
		{fn("substring", lStr("x"), lInt(1), lInt(-1)), ErrInvalidArgument},
	}
	for _, tt := range tests {
		if _, err := EvalConst(tt.e); !errors.Is(err, tt.kind) {
			t.Errorf("%s: %v, want %v", tt.e, err, tt.kind)
		}
	}
}

func TestArrayOfValueOf(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	values := []types.Value{
		types.BoolValue(true), types.IntValue(-5), types.FloatValue(2.5),
		lDec("-12.34", 6, 2).Value, types.StringValue("héllo"), lTS("2020-01-02 03:04:05.000006").Value,
		types.NullValue(tInt), types.NullValue(tNull), types.NullValue(dec(5, 1)),
	}
	for _, v := range values {
		arr, err := ArrayOf(v, 3, mem)
		if err != nil {
			t.Fatalf("ArrayOf(%s): %v", FormatValue(v), err)
		}
		if arr.Len() != 3 {
			t.Errorf("ArrayOf(%s): %d rows", FormatValue(v), arr.Len())
		}
		for i := range 3 {
			got := ValueOf(arr, i)
			if FormatValue(got) != FormatValue(v) || got.Type != v.Type {
				t.Errorf("row %d of ArrayOf(%s) = %s of type %s", i, FormatValue(v), FormatValue(got), got.Type)
			}
		}
		arr.Release()
	}
}

// A long text column exercises the string builder's growth past its first guess.
func TestStringGrowth(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := makeBatch(t, mem, strs(`["ab", "cd", "ef", "gh"]`))
	defer b.Release()
	e := fn("replace", col(0, tStr), lStr("b"), lStr("0123456789012345678901234567890123456789012345678901234567890123456789"))
	got, err := Eval(e, b, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if r := render(got); r[0] != "'a0123456789012345678901234567890123456789012345678901234567890123456789'" || r[3] != "'gh'" {
		t.Errorf("got %v", r)
	}
}
