package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// intervalOps binds PostgreSQL's interval operators that are not timestamp
// arithmetic (intervalArith): interval comparison (by interval_cmp_value's
// key, '1 mon' = '30 days'), interval + interval and interval - interval
// (part by part), interval * number and number * interval (interval_mul),
// and timestamp - timestamp (an interval of days and time). ok is false for
// other operands.
func (b *binder) intervalOps(n ast.Node, fn string, l, r *expr.Expr) (e *expr.Expr, ok bool, err error) {
	li, ri := l.Type.OID == types.OIDInterval, r.Type.OID == types.OIDInterval
	stamp := func(x *expr.Expr) bool { return x.Type.ID == types.Timestamp }
	switch {
	case li && ri && isComparison(fn):
		lk, err := b.call(n, "$interval_key", l)
		if err != nil {
			return nil, true, err
		}
		rk, err := b.call(n, "$interval_key", r)
		if err != nil {
			return nil, true, err
		}
		e, err = b.call(n, fn, lk, rk)
		return e, true, err
	case li && ri && fn == "+":
		e, err = b.call(n, "$interval_add", l, r)
		return e, true, err
	case li && ri && fn == "-":
		e, err = b.call(n, "$interval_sub", l, r)
		return e, true, err
	case li && fn == "*" && r.Type.IsNumeric():
		e, err = b.call(n, "$interval_mul", l, expr.Cast(r, types.Float64Type))
		return e, true, err
	case ri && fn == "*" && l.Type.IsNumeric():
		e, err = b.call(n, "$interval_mul", r, expr.Cast(l, types.Float64Type))
		return e, true, err
	case fn == "-" && stamp(l) && stamp(r) && (l.Type.OID == types.OIDTimestamptz) == (r.Type.OID == types.OIDTimestamptz):
		e, err = b.call(n, "$timestamp_diff", expr.Cast(l, types.TimestampType), expr.Cast(r, types.TimestampType))
		return e, true, err
	}
	return nil, false, nil
}
