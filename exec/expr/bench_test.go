package expr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkKernels measures common kernels over a 4096-row batch. Recorded
// figures belong in bench/, not here.
func BenchmarkKernels(bm *testing.B) {
	const n = 4096
	var ints, words []string
	for i := range n {
		ints = append(ints, fmt.Sprint(i%100-50))
		words = append(words, fmt.Sprintf("%q", []string{"Alpha", "beta", "Gamma delta", "epsilon"}[i%4]))
	}
	mem := memory.NewGoAllocator()
	b := makeBatch(bm, mem, column{tInt, "[" + strings.Join(ints, ",") + "]"}, column{tStr, "[" + strings.Join(words, ",") + "]"})
	defer b.Release()
	i, s := col(0, tInt), col(1, tStr)
	for _, e := range []*Expr{
		fn("+", i, lInt(1)), fn("=", i, lInt(5)), fn("and", fn(">", i, lInt(0)), fn("<", i, lInt(10))),
		fn("lower", s), fn("like", s, lStr("%a%"), lStr(`\`)), fn("<>", s, lStr("")), fn("=", s, lStr("beta")),
		fn("substring", s, lInt(2), lInt(3)), fn("case", fn(">", i, lInt(0)), s, lStr("neg")),
	} {
		bm.Run(e.String(), func(bm *testing.B) {
			for bm.Loop() {
				arr, err := Eval(e, b, mem)
				if err != nil {
					bm.Fatal(err)
				}
				arr.Release()
			}
		})
	}
}
