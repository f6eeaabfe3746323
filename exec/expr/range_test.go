package expr

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestMatchRange: a lower and an upper bound of one expression by literals
// make a range, in either order and with the literal on either side, a date
// cast to a timestamp counting as the date; anything else does not.
func TestMatchRange(t *testing.T) {
	x, y := col(0, tInt), col(1, tInt)
	d := col(2, types.DateType)
	dts := Cast(d, tTS)
	cmp := func(op string, a, b *Expr) *Expr { return Call(op, tBool, a, b) }
	for _, c := range []struct {
		name string
		a, b *Expr
		want string // lo, hi and their masks, or "" for no range
	}{
		{"x >= 1 AND x < 5", cmp(">=", x, lInt(1)), cmp("<", x, lInt(5)), "1 6 5 1"},
		{"x < 5 AND x > 1", cmp("<", x, lInt(5)), cmp(">", x, lInt(1)), "1 4 5 1"},
		{"1 <= x AND 5 >= x", cmp("<=", lInt(1), x), cmp(">=", lInt(5), x), "1 6 5 3"},
		{"date and its cast", cmp(">=", d, Literal(types.DateValue(10))), cmp("<", dts, lTS("1970-01-01 00:00:01")), "10 6 1000000 1"},
		{"two columns", cmp(">=", x, lInt(1)), cmp("<", y, lInt(5)), ""},
		{"two lower bounds", cmp(">=", x, lInt(1)), cmp(">", x, lInt(5)), ""},
		{"equality", cmp("=", x, lInt(1)), cmp("<", x, lInt(5)), ""},
		{"NULL bound", cmp(">=", x, lNullT(tInt)), cmp("<", x, lInt(5)), ""},
		{"column bound", cmp(">=", x, y), cmp("<", x, lInt(5)), ""},
		{"text", cmp(">=", col(3, tStr), lStr("a")), cmp("<", col(3, tStr), lStr("b")), ""},
	} {
		r, ok := MatchRange(c.a, c.b)
		got := ""
		if ok {
			got = fmt.Sprintf("%d %d %d %d", r.Lo.Int, r.loMask, r.Hi.Int, r.hiMask)
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRangeEval checks a range's truth, over bigints and decimals with NULLs,
// for every kind of bound, against the comparisons row by row.
func TestRangeEval(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 77 // not a multiple of eight
	vals := make([]*int64, n)
	var intJSON, decJSON []string
	for i := range vals {
		if r.IntN(6) == 0 {
			intJSON, decJSON = append(intJSON, "null"), append(decJSON, "null")
			continue
		}
		v := r.Int64N(12) - 1
		vals[i] = &v
		intJSON = append(intJSON, fmt.Sprint(v))
		decJSON = append(decJSON, fmt.Sprintf("%q", fmt.Sprintf("%d.00", v)))
	}
	b := makeBatch(t, mem, ints("["+strings.Join(intJSON, ",")+"]"), decs(15, 2, "["+strings.Join(decJSON, ",")+"]"))
	defer b.Release()
	holds := map[string]func(v, c int64) bool{
		">": func(v, c int64) bool { return v > c }, ">=": func(v, c int64) bool { return v >= c },
		"<": func(v, c int64) bool { return v < c }, "<=": func(v, c int64) bool { return v <= c },
	}
	for _, loOp := range []string{">", ">="} {
		for _, hiOp := range []string{"<", "<="} {
			for _, isDec := range []bool{false, true} {
				x, lo, hi := col(0, tInt), lInt(2), lInt(7)
				if isDec {
					x, lo, hi = col(1, dec(15, 2)), lDec("2.00", 15, 2), lDec("7.00", 15, 2)
				}
				rg, ok := MatchRange(Call(loOp, tBool, x, lo), Call(hiOp, tBool, x, hi))
				if !ok {
					t.Fatalf("x %s 2 AND x %s 7: no range", loOp, hiOp)
				}
				res, err := rg.Eval(b, mem)
				if err != nil {
					t.Fatal(err)
				}
				got := res.(*array.Boolean)
				for i, v := range vals {
					switch {
					case v == nil && !got.IsNull(i):
						t.Errorf("decimal %v: x %s 2 AND x %s 7 at NULL row %d: %v", isDec, loOp, hiOp, i, got.Value(i))
					case v != nil && (got.IsNull(i) || got.Value(i) != (holds[loOp](*v, 2) && holds[hiOp](*v, 7))):
						t.Errorf("decimal %v: %d %s 2 AND %d %s 7 at row %d: %v", isDec, *v, loOp, *v, hiOp, i, got.ValueStr(i))
					}
				}
				res.Release()
			}
		}
	}
}
