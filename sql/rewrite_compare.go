package sql

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// microsPerDay is a day's length in microseconds: a DATE is stored as the
// timestamp of its midnight.
const microsPerDay = 86400 * 1_000_000

// dateLiteralBound bounds the timestamp literals compareAsDates rewrites, far
// inside int64 so that rounding to a midnight cannot overflow and ±infinity
// (math.MaxInt64, math.MinInt64) is never touched.
const dateLiteralBound = 1 << 62

// compareAsDates rewrites CAST(d AS timestamp) op TIMESTAMP t, d a DATE
// expression and t a constant, into d op' DATE t', or returns nil. The date +
// interval of PostgreSQL gives a timestamp, so a filter such as
// o_orderdate < DATE '1993-08-01' + INTERVAL '3' MONTH casts every row; the
// rewrite compares the dates themselves, which a scan's range filters take.
//
// The cast from DATE to timestamp keeps the stored microseconds (a date is its
// midnight; ±infinity stays), so both sides compare as integers and the rewrite
// only has to pick a midnight t' with the same answer for every midnight d:
//
//	d <  t  <=>  d <  ceil(t)     d >= t  <=>  d >= ceil(t)
//	d <= t  <=>  d <= floor(t)    d >  t  <=>  d >  floor(t)
//	d =  t  <=>  d =  t           (t a midnight only; otherwise false or NULL)
//	d <> t  <=>  d <> t           (t a midnight only)
//
// NULL stays NULL on both sides.
func compareAsDates(c *expr.Expr) *expr.Expr {
	if c.Kind != expr.KindCall || !isComparison(c.Func) || len(c.Args) != 2 {
		return nil
	}
	fn, l, r := c.Func, c.Args[0], c.Args[1]
	if l.Kind == expr.KindLiteral {
		fn, l, r = flipComparison(fn), r, l
	}
	if l.Kind != expr.KindCast || l.Type.ID != types.Timestamp || l.Args[0].Type.ID != types.Date ||
		r.Kind != expr.KindLiteral || r.Type.ID != types.Timestamp || r.Value.Null {
		return nil
	}
	t := r.Value.Int
	if t >= dateLiteralBound || t <= -dateLiteralBound {
		return nil
	}
	floor := floorDiv(t, microsPerDay) * microsPerDay
	ceil := floor
	if floor != t {
		ceil += microsPerDay
	}
	var d int64
	switch fn {
	case "<", ">=":
		d = ceil
	case "<=", ">":
		d = floor
	default: // = and <>
		if floor != t {
			return nil
		}
		d = t
	}
	return expr.Call(fn, c.Type, l.Args[0], expr.Literal(types.DateValue(d)))
}

// flipComparison returns the operator op' with a op b <=> b op' a.
func flipComparison(fn string) string {
	switch fn {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return fn
}

// floorDiv is a / b rounded toward negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// compareNarrowDecimal rewrites CAST(x AS decimal(p,s)) op c, x a decimal(q,s)
// with q <= p and c a constant that fits decimal(q,s), into x op c': widening a
// decimal's precision at the same scale keeps its unscaled number, so the
// comparison is the same on both types, and the filter skips a cast per row
// (TPC-H's l_quantity < 24 binds the 24 as decimal(21,2)). It returns nil when
// the pattern does not hold.
func compareNarrowDecimal(c *expr.Expr) *expr.Expr {
	if c.Kind != expr.KindCall || !isComparison(c.Func) || len(c.Args) != 2 {
		return nil
	}
	fn, l, r := c.Func, c.Args[0], c.Args[1]
	if l.Kind == expr.KindLiteral {
		fn, l, r = flipComparison(fn), r, l
	}
	if l.Kind != expr.KindCast || l.Type.ID != types.Decimal || r.Kind != expr.KindLiteral || r.Type != l.Type || r.Value.Null {
		return nil
	}
	x := l.Args[0]
	if x.Type.ID != types.Decimal || x.Type.Scale != l.Type.Scale || x.Type.Precision <= 0 || x.Type.Precision > l.Type.Precision {
		return nil
	}
	n := r.Value.Decimal()
	if n.HighBits() == math.MinInt64 && n.LowBits() == 0 || !n.Abs().Less(decimal128.GetScaleMultiplier(int(x.Type.Precision))) {
		return nil
	}
	return expr.Call(fn, c.Type, x, expr.Literal(types.DecimalValue(x.Type, n)))
}
