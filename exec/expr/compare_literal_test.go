package expr

import (
	"bytes"
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

// TestEqualsLiteral checks equalsLiteral's word-at-a-time comparison against
// bytes.Equal row by row: literals of 0 to 10 bytes, rows that share a prefix
// with the literal or differ in its last byte, rows too near the end of the
// data buffer for an 8-byte load, slices of an array (offsets not from 0),
// and an out bitmap that already has bits set (IN lists OR into it).
func TestEqualsLiteral(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for l := 0; l <= 10; l++ {
		lit := []byte("RFAMAILSHIP"[:l])
		for n := 0; n < 70; n++ {
			var offs []int32
			var data []byte
			rows := make([][]byte, n+3)
			for i := range rows {
				row := append([]byte(nil), lit...)
				switch r.IntN(5) {
				case 0: // shorter
					row = row[:r.IntN(len(row)+1)]
				case 1: // longer
					row = append(row, 'x')
				case 2: // last byte differs
					if len(row) > 0 {
						row[len(row)-1] ^= 1
					}
				case 3: // random bytes of the same length
					for j := range row {
						row[j] = byte(r.IntN(3)) + 'A'
					}
				}
				rows[i] = row
				offs = append(offs, int32(len(data)))
				data = append(data, row...)
			}
			offs = append(offs, int32(len(data)))
			start := r.IntN(3) // a slice: the column begins at row start
			x := textArg{offs: offs[start : start+n+1], data: data, m: -1}
			for _, want := range []bool{true, false} {
				out := make([]byte, (n+7)/8+1)
				pre := make([]bool, n)
				for i := range n {
					if pre[i] = r.IntN(4) == 0; pre[i] {
						bitutil.SetBit(out, i)
					}
				}
				equalsLiteral(x, lit, n, want, out)
				for i := range n {
					exp := pre[i] || bytes.Equal(rows[start+i], lit) == want
					if bitutil.BitIsSet(out, i) != exp {
						t.Fatalf("literal %q, row %q (%d of %d), want=%v: got %v", lit, rows[start+i], i, n, want, !exp)
					}
				}
			}
		}
	}
}
