package expr

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestMatchBounds: comparisons of one column with literals, alone or ANDed,
// make bounds (a date cast to a timestamp counting as the date); anything
// else does not.
func TestMatchBounds(t *testing.T) {
	x, y := col(0, tInt), col(1, tInt)
	d := col(2, types.DateType)
	cmp := func(op string, a, b *Expr) *Expr { return Call(op, tBool, a, b) }
	and := func(a ...*Expr) *Expr { return Call("and", tBool, a...) }
	for _, c := range []struct {
		name string
		e    *Expr
		ok   bool
	}{
		{"x < 5", cmp("<", x, lInt(5)), true},
		{"5 = x", cmp("=", lInt(5), x), true},
		{"x >= 1 AND x < 5 AND x <= 9", and(cmp(">=", x, lInt(1)), cmp("<", x, lInt(5)), cmp("<=", x, lInt(9))), true},
		{"date and its cast", and(cmp(">=", d, Literal(types.DateValue(10))), cmp("<", Cast(d, tTS), lTS("1970-01-01 00:00:01"))), true},
		{"decimal", cmp(">", col(3, dec(15, 2)), lDec("0.05", 15, 2)), true},
		{"two columns", and(cmp(">=", x, lInt(1)), cmp("<", y, lInt(5))), false},
		{"column against column", cmp("<", x, y), false},
		{"<>", cmp("<>", x, lInt(1)), false},
		{"NULL bound", cmp(">=", x, lNullT(tInt)), false},
		{"an expression", cmp("<", fn("+", x, lInt(1)), lInt(5)), false},
		{"text", cmp("<", col(4, tStr), lStr("b")), false},
		{"double", cmp("<", col(5, tF), lF(1)), false},
		{"or", Call("or", tBool, cmp("<", x, lInt(1)), cmp(">", x, lInt(5))), false},
	} {
		if _, ok := MatchBounds(c.e); ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
		}
	}
}

// boundsOps are the comparisons MatchBounds takes, each with its meaning
// for the sign of a comparison of the value with the constant.
var boundsOps = map[string]func(c int) bool{
	"=": func(c int) bool { return c == 0 }, "<": func(c int) bool { return c < 0 },
	"<=": func(c int) bool { return c <= 0 }, ">": func(c int) bool { return c > 0 },
	">=": func(c int) bool { return c >= 0 },
}

// mirrored is each comparison with its sides swapped.
var mirrored = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// TestBoundsSelect checks SelectAll and Refine, over bigints and decimals
// with NULLs, at the types' extremes, over arrays with an offset, against
// the comparisons evaluated one by one in plain Go (big.Int for decimals).
func TestBoundsSelect(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(11, 12))
	const n = 300
	// Values near the constants, and the extremes.
	bigDec, _ := new(big.Int).SetString("99999999999999999999999999999999999999", 10) // 10^38 - 1
	intPool := []int64{math.MinInt64, math.MinInt64 + 1, -3, -1, 0, 1, 2, 3, 5, 7, math.MaxInt64 - 1, math.MaxInt64}
	decPool := []*big.Int{new(big.Int).Neg(bigDec), big.NewInt(-300), big.NewInt(-1), big.NewInt(0), big.NewInt(1),
		big.NewInt(5), big.NewInt(6), big.NewInt(7), big.NewInt(1 << 62), new(big.Int).Lsh(big.NewInt(1), 64), bigDec}
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	db := array.NewDecimal128Builder(mem, dt)
	defer db.Release()
	var intVals []int64
	var decVals []*big.Int
	for range n + 1 {
		if r.IntN(7) == 0 {
			ib.AppendNull()
			db.AppendNull()
			intVals, decVals = append(intVals, 0), append(decVals, nil)
			continue
		}
		iv, dv := intPool[r.IntN(len(intPool))], decPool[r.IntN(len(decPool))]
		ib.Append(iv)
		db.Append(decimal128.FromBigInt(dv))
		intVals, decVals = append(intVals, iv), append(decVals, dv)
	}
	ia0, da0 := ib.NewArray(), db.NewArray()
	defer ia0.Release()
	defer da0.Release()
	// Drop row 0: the arrays the kernels read have an offset of 1.
	ia, da := array.NewSlice(ia0, 1, int64(n+1)), array.NewSlice(da0, 1, int64(n+1))
	defer ia.Release()
	defer da.Release()
	intVals, decVals = intVals[1:], decVals[1:]
	ops := []string{"=", "<", "<=", ">", ">="}
	checked := 0
	for trial := range 400 {
		isDec := trial%2 == 1
		var conds []*Expr
		var holds []func(i int) bool
		for range 1 + r.IntN(2) {
			op := ops[r.IntN(len(ops))]
			var lit *Expr
			var cmpTo func(i int) int // the row's value against the literal
			if isDec {
				c := decPool[r.IntN(len(decPool))]
				lit = Literal(types.DecimalValue(types.DecimalType(38, 2), decimal128.FromBigInt(c)))
				cmpTo = func(i int) int { return decVals[i].Cmp(c) }
			} else {
				c := intPool[r.IntN(len(intPool))]
				lit = lInt(c)
				cmpTo = func(i int) int { return cmp.Compare(intVals[i], c) }
			}
			x := col(0, tInt)
			if isDec {
				x = col(0, types.DecimalType(38, 2))
			}
			holdsOp := boundsOps[op]
			if r.IntN(2) == 0 {
				conds = append(conds, Call(op, tBool, x, lit))
			} else { // the literal first, the op mirrored
				conds = append(conds, Call(mirrored[op], tBool, lit, x))
			}
			holds = append(holds, func(i int) bool { return holdsOp(cmpTo(i)) })
		}
		e := conds[0]
		if len(conds) > 1 {
			e = Call("and", tBool, conds...)
		}
		b, ok := MatchBounds(e)
		if !ok {
			t.Fatalf("%s: no bounds", e)
		}
		a := arrow.Array(ia)
		if isDec {
			a = da
		}
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(n))
		defer rec.Release()
		var want, wantSub []int32
		var sub []int32
		for i := range n {
			null := a.IsNull(i)
			in := !null
			for _, h := range holds {
				in = in && h(i)
			}
			pick := r.IntN(3) > 0
			if pick {
				sub = append(sub, int32(i))
			}
			if in {
				want = append(want, int32(i))
				if pick {
					wantSub = append(wantSub, int32(i))
				}
			}
		}
		got := b.SelectAll(rec, []int32{-7}) // appends after what is there
		if fmt.Sprint(got) != fmt.Sprint(append([]int32{-7}, want...)) {
			t.Fatalf("%s: SelectAll %v, want %v", e, got[1:], want)
		}
		if got := b.Refine(rec, sub); fmt.Sprint(got) != fmt.Sprint(wantSub) {
			t.Fatalf("%s: Refine %v, want %v", e, got, wantSub)
		}
		if len(want) > 0 && len(want) < n*6/7 {
			checked++
		}
	}
	if checked < 150 {
		t.Fatalf("a test that cannot tell: %d of 400 trials kept some rows but not all", checked)
	}
}
