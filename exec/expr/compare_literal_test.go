package expr

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// TestCompareColumnLiteral checks the byte-at-a-time comparison of a column
// with a literal against a row-by-row reference, for every operator and for
// lengths around multiples of eight.
func TestCompareColumnLiteral(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		mask := cmpMask(op)
		for n := 0; n < 40; n++ {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = r.Int64N(5)
			}
			c := int64(2)
			out := make([]byte, (n+7)/8)
			compareColumnLiteral(orderOf(mask), xs, c, out)
			for i, x := range xs {
				var want bool
				switch op {
				case "=":
					want = x == c
				case "<>":
					want = x != c
				case "<":
					want = x < c
				case "<=":
					want = x <= c
				case ">":
					want = x > c
				case ">=":
					want = x >= c
				}
				if bitutil.BitIsSet(out, i) != want {
					t.Fatalf("%d %s %d at row %d of %d: got %v", x, op, c, i, n, !want)
				}
			}
		}
	}
}

// TestCompareOrdered checks compareOrdered for every operator and every shape
// of its arguments (two columns, a literal on either side, two literals)
// against Go's comparison of each row, with values that tie often.
func TestCompareOrdered(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		mask := cmpMask(op)
		for n := 1; n < 40; n++ {
			xs, ys := make([]int64, n), make([]int64, n)
			for i := range xs {
				xs[i], ys[i] = r.Int64N(5)-2, r.Int64N(5)-2
			}
			for _, shape := range []string{"columns", "literal right", "literal left", "literals"} {
				x, y := valsOf(xs), valsOf(ys)
				if shape == "literal right" || shape == "literals" {
					y = vals[int64]{ys[:1], 0}
				}
				if shape == "literal left" || shape == "literals" {
					x = vals[int64]{xs[:1], 0}
				}
				out := make([]byte, (n+7)/8)
				compareOrdered(mask, x, y, n, out)
				for i := range n {
					a, c := x.at(i), y.at(i)
					want := map[string]bool{"=": a == c, "<>": a != c, "<": a < c, "<=": a <= c, ">": a > c, ">=": a >= c}[op]
					if bitutil.BitIsSet(out, i) != want {
						t.Fatalf("%s: %d %s %d at row %d of %d: got %v", shape, a, op, c, i, n, !want)
					}
				}
			}
		}
	}
}
