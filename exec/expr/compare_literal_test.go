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
			compareColumnLiteral(mask&1, mask>>1&1, mask>>2&1, xs, c, out)
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
