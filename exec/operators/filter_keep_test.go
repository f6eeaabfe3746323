package operators

import (
	"testing"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestFilterKeep: a filter with Keep passes on only those input columns, in
// Keep's order, whichever way its rows go out (all rows, a contiguous slice,
// a gather, and through the conjuncts' path): the rows are filterRows' as
// written by hand, narrowed to (f, x) or (s).
func TestFilterKeep(t *testing.T) {
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	fx := types.Schema{filterSchema[5], filterSchema[0]}
	tests := []struct {
		name string
		cond *expr.Expr
		keep []int
		out  types.Schema
		want []string
	}{
		{"all rows", expr.Literal(types.BoolValue(true)), []int{5, 0}, fx,
			[]string{`[0.5,1]`, `[null,null]`, `[100000000000000000000,3]`, `[-1,5]`, `[2,2]`}},
		{"x > 2: contiguous rows", expr.Call(">", types.BoolType, filterCol(0), lit(2)), []int{5, 0}, fx,
			[]string{`[100000000000000000000,3]`, `[-1,5]`}},
		{"s <> '': scattered rows, the text dropped", expr.Call("<>", types.BoolType, filterCol(1), expr.Literal(types.StringValue(""))),
			[]int{5, 0}, fx, []string{`[0.5,1]`, `[100000000000000000000,3]`, `[2,2]`}},
		{"x > 0 and s <> '': conjuncts", expr.Call("and", types.BoolType,
			expr.Call(">", types.BoolType, filterCol(0), lit(0)),
			expr.Call("<>", types.BoolType, filterCol(1), expr.Literal(types.StringValue("")))),
			[]int{1}, types.Schema{filterSchema[1]}, []string{`["a"]`, `["ccc"]`, `["bb"]`}},
		{"x > 0 and x < 100: conjuncts, all rows but NULL", expr.Call("and", types.BoolType,
			expr.Call(">", types.BoolType, filterCol(0), lit(0)),
			expr.Call("<", types.BoolType, filterCol(5), expr.Literal(types.FloatValue(1e30)))),
			[]int{5, 0}, fx, []string{`[0.5,1]`, `[100000000000000000000,3]`, `[-1,5]`, `[2,2]`}},
		{"conjuncts passing every row", expr.Call("and", types.BoolType,
			expr.Call("or", types.BoolType, expr.Call("is_null", types.BoolType, filterCol(0)), expr.Literal(types.BoolValue(true))),
			expr.Call("or", types.BoolType, expr.Call("is_null", types.BoolType, filterCol(1)), expr.Literal(types.BoolValue(true)))),
			[]int{1}, types.Schema{filterSchema[1]}, []string{`["a"]`, `[null]`, `["ccc"]`, `[""]`, `["bb"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, filterSchema, filterRows)
			defer testkit.Release(bs)
			op := opTestNew(t, "filter", FilterConfig{Cond: tc.cond, Keep: tc.keep}, tc.out)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "rows", c.Rows, tc.want)
		})
	}
}
