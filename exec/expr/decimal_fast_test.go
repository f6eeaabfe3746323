package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// randomDecimal returns a decimal of at most digits digits, often near the
// int64 range's ends when digits allows, and sometimes wider than an int64.
func randomDecimal(r *rand.Rand, digits int) num {
	switch r.IntN(6) {
	case 0:
		return decimal128.FromI64(math.MaxInt64 - r.Int64N(3))
	case 1:
		return decimal128.FromI64(math.MinInt64 + r.Int64N(3))
	case 2:
		return decimal128.FromBigInt(new(big.Int).Lsh(big.NewInt(r.Int64N(1000)-500), 70))
	}
	v := r.Int64N(pow10Int[min(digits, 18)])
	if r.IntN(2) == 0 {
		v = -v
	}
	return decimal128.FromI64(v)
}

// TestArithDecimalSmall checks arithDecimal, whose int64 fast path takes
// most rows, against big.Int arithmetic: every result equal, and a result
// beyond the result's precision an error.
func TestArithDecimalSmall(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, op := range []string{"+", "-", "*"} {
		for _, p := range []int{5, 18, 38} {
			for round := 0; round < 200; round++ {
				n := 1 + r.IntN(20)
				xs, ys := make([]num, n), make([]num, n)
				for i := range xs {
					xs[i], ys[i] = randomDecimal(r, 9), randomDecimal(r, 9)
				}
				if round%2 == 0 { // only small operands, the fast path's
					for i := range xs {
						xs[i], ys[i] = decimal128.FromI64(r.Int64N(2e9)-1e9), decimal128.FromI64(r.Int64N(2e9)-1e9)
					}
				}
				t1, res := types.DecimalType(p, 2), types.DecimalType(p, 2)
				u := t1
				if op == "*" {
					u, res = types.DecimalType(p, 0), types.DecimalType(p, 2)
				}
				y := valsOf(ys)
				if round%3 == 1 { // a literal on the right, as in 1.00 - l_discount's mirror
					y = vals[num]{ys[:1], 0}
				}
				buf, err := arithDecimal(op, valsOf(xs), y, n, t1, u, res, nil, memory.DefaultAllocator)
				limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
				wantErr := false
				want := make([]*big.Int, n)
				for i := range xs {
					a, b := xs[i].BigInt(), y.at(i).BigInt()
					switch op {
					case "+":
						want[i] = a.Add(a, b)
					case "-":
						want[i] = a.Sub(a, b)
					case "*":
						want[i] = a.Mul(a, b)
					}
					if new(big.Int).Abs(want[i]).Cmp(limit) >= 0 {
						wantErr = true
					}
				}
				if wantErr {
					if err == nil {
						t.Fatalf("%s at precision %d of %v and %v: no error, want one", op, p, xs, ys)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s at precision %d of %v and %v: %v", op, p, xs, ys, err)
				}
				got := arrow.GetData[num](buf.Bytes())[:n]
				for i := range got {
					if got[i].BigInt().Cmp(want[i]) != 0 {
						t.Fatalf("%v %s %v at precision %d: got %v, want %v", xs[i], op, y.at(i), p, got[i].BigInt(), want[i])
					}
				}
				buf.Release()
			}
		}
	}
}

// TestCompareDecimals checks the byte-at-a-time decimal comparison against
// decimal128's Cmp, for every operator, two columns and a literal on either side,
// negative values and values wider than an int64.
func TestCompareDecimals(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		mask := cmpMask(op)
		for n := 1; n < 40; n++ {
			xs, ys := make([]num, n), make([]num, n)
			for i := range xs {
				xs[i], ys[i] = randomDecimal(r, 2), randomDecimal(r, 2)
				if r.IntN(3) == 0 {
					ys[i] = xs[i]
				}
			}
			for _, shape := range []string{"columns", "literal right", "literal left"} {
				x, y := valsOf(xs), valsOf(ys)
				switch shape {
				case "literal right":
					y = vals[num]{ys[:1], 0}
				case "literal left":
					x = vals[num]{xs[:1], 0}
				}
				out := make([]byte, (n+7)/8)
				compareDecimals(mask, x, y, n, out)
				for i := range xs {
					c := x.at(i).Cmp(y.at(i))
					if bitutil.BitIsSet(out, i) != (mask>>(c+1)&1 != 0) {
						t.Fatalf("%s: %v %s %v at row %d of %d: got %v", shape, x.at(i).BigInt(), op, y.at(i).BigInt(), i, n, bitutil.BitIsSet(out, i))
					}
				}
			}
		}
	}
}
