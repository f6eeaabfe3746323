package expr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The common kernels work on whole buffers: the Go allocations of one Eval do not
// grow with the number of rows (Arrow buffers come from the allocator and are
// not counted here).
func TestHotPathsDoNotAllocatePerRow(t *testing.T) {
	const n = 4096
	var ints, words []string
	for i := range n {
		ints = append(ints, fmt.Sprint(i%100-50))
		words = append(words, fmt.Sprintf("%q", []string{"Alpha", "beta", "Gamma delta", "é"}[i%4]))
	}
	mem := memory.NewGoAllocator()
	b := makeBatch(t, mem,
		column{tInt, "[" + strings.Join(ints, ",") + "]"},
		column{tStr, "[" + strings.Join(words, ",") + "]"},
		column{tF, "[" + strings.Join(ints, ",") + "]"},
	)
	defer b.Release()
	i, s, f := col(0, tInt), col(1, tStr), col(2, tF)
	for _, e := range []*Expr{
		fn("+", i, lInt(1)), fn("*", f, lF(2)), fn("=", i, lInt(5)), fn("<", s, lStr("b")),
		fn("and", fn(">", i, lInt(0)), fn("<", f, lF(10))), fn("is_null", s),
		fn("lower", s), fn("upper", s), fn("length", s), fn("like", s, lStr("%a%"), lStr(`\`)),
		fn("like", s, lStr("_a%e_"), lStr(`\`)), fn("in", s, lStr("beta"), lStr("x")), fn("in", i, lInt(1), lInt(2)),
		fn("substring", s, lInt(2), lInt(3)), fn("||", s, lStr("!")), fn("concat", s, s),
		fn("case", fn(">", i, lInt(0)), s, lStr("neg")), fn("coalesce", s, lStr("")),
		cast(i, tStr), cast(f, tInt), cast(f, tStr), cast(cast(i, dec(10, 2)), tStr), cast(cast(i, tStr), tInt),
		cast(cast(cast(i, tStr), tF), tInt), cast(cast(cast(i, tStr), dec(10, 2)), tF), cast(cast(lStr("yes"), tBool), tInt),
		cast(cast(lStr("2020-01-02 03:04:05.5"), tTS), tStr), cast(cast(cast(i, tF), dec(12, 3)), tStr), cast(i, dec(10, 2)), fn("replace", s, lStr("a"), lStr("AA")),
	} {
		allocs := testing.AllocsPerRun(5, func() {
			arr, err := Eval(e, b, mem)
			if err != nil {
				t.Fatal(err)
			}
			arr.Release()
		})
		if allocs > 100 {
			t.Errorf("%s: %.0f allocations for %d rows", e, allocs, n)
		}
	}
}
