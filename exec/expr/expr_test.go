package expr

import (
	"testing"

	"github.com/hummer-db/hummer/exec/types"
)

// TestSame: trees that differ only in display names are the same; any other
// difference, or a volatile call, is not.
func TestSame(t *testing.T) {
	x := func(name string) *Expr { return Column(0, types.Int64Type, name) }
	one := Literal(types.IntValue(1))
	plus := func(a, b *Expr) *Expr { return Call("+", types.Int64Type, a, b) }
	for _, c := range []struct {
		a, b *Expr
		want bool
	}{
		{plus(x("x"), one), plus(x("renamed"), one), true},
		{plus(x("x"), one), plus(Column(1, types.Int64Type, "x"), one), false},
		{plus(x("x"), one), plus(x("x"), Literal(types.IntValue(2))), false},
		{plus(x("x"), one), plus(one, x("x")), false},
		{plus(x("x"), one), Call("-", types.Int64Type, x("x"), one), false},
		{Cast(x("x"), types.DecimalType(20, 0)), Cast(x("x"), types.DecimalType(20, 0)), true},
		{Cast(x("x"), types.DecimalType(20, 0)), Cast(x("x"), types.DecimalType(21, 0)), false},
		{Call("proctime", types.TimestampType), Call("proctime", types.TimestampType), false},
	} {
		if got := c.a.Same(c.b); got != c.want {
			t.Errorf("%s same as %s: %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
