package planner

import (
	"testing"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// TestUnnestLengthBounds: which conditions on the pieces (column 1) move into
// the split, as what bounds, and what stays in the filter.
func TestUnnestLengthBounds(t *testing.T) {
	col := func(i int) *expr.Expr { return expr.Column(i, types.StringType, "w") }
	str := func(s string) *expr.Expr { return expr.Literal(types.StringValue(s)) }
	num := func(k int64) *expr.Expr { return expr.Literal(types.IntValue(k)) }
	call := func(f string, t types.Type, args ...*expr.Expr) *expr.Expr { return expr.Call(f, t, args...) }
	cmp := func(op string, l, r *expr.Expr) *expr.Expr { return call(op, types.BoolType, l, r) }
	length := func(f string, e *expr.Expr) *expr.Expr { return call(f, types.Int64Type, e) }
	and := func(args ...*expr.Expr) *expr.Expr { return call("and", types.BoolType, args...) }
	other := cmp("<>", col(1), str("bb"))
	for _, c := range []struct {
		name            string
		cond            *expr.Expr
		minBytes, chars int
		rest            *expr.Expr
	}{
		{"not empty", cmp("<>", col(1), str("")), 1, 0, nil},
		{"not empty, reversed", cmp("<>", str(""), col(1)), 1, 0, nil},
		{"length > 3", cmp(">", length("length", col(1)), num(3)), 0, 4, nil},
		{"3 < char_length", cmp("<", num(3), length("char_length", col(1))), 0, 4, nil},
		{"octet_length >= 2", cmp(">=", length("octet_length", col(1)), num(2)), 2, 0, nil},
		{"both and another", and(cmp("<>", col(1), str("")), and(cmp(">", length("length", col(1)), num(3)), other)), 1, 4, other},
		{"two others stay together", and(other, cmp("=", col(1), str("x")), cmp(">=", length("length", col(1)), num(5))), 0, 5, and(other, cmp("=", col(1), str("x")))},
		{"another column", cmp("<>", col(0), str("")), 0, 0, cmp("<>", col(0), str(""))},
		{"an upper bound", cmp("<", length("length", col(1)), num(3)), 0, 0, cmp("<", length("length", col(1)), num(3))},
		{"k > length is an upper bound", cmp(">", num(3), length("length", col(1))), 0, 0, cmp(">", num(3), length("length", col(1)))},
		{"not a length", cmp(">", length("ascii", col(1)), num(3)), 0, 0, cmp(">", length("ascii", col(1)), num(3))},
		{"an OR", call("or", types.BoolType, cmp("<>", col(1), str("")), other), 0, 0, call("or", types.BoolType, cmp("<>", col(1), str("")), other)},
		{"a non-empty literal", cmp("<>", col(1), str("a")), 0, 0, cmp("<>", col(1), str("a"))},
	} {
		b, ch, rest := unnestLengthBounds(c.cond, 1)
		gotRest, wantRest := "<nil>", "<nil>"
		if rest != nil {
			gotRest = rest.String()
		}
		if c.rest != nil {
			wantRest = c.rest.String()
		}
		if b != c.minBytes || ch != c.chars || gotRest != wantRest {
			t.Errorf("%s: bytes %d chars %d rest %s; want %d %d %s", c.name, b, ch, gotRest, c.minBytes, c.chars, wantRest)
		}
	}
}
