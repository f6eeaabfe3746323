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

// intervalSortKey returns the column ORDER BY sorts by for the key at col:
// for an interval, whose text does not sort as PostgreSQL sorts intervals,
// a hidden column of its interval_cmp_value key ($interval_key), computed
// from the column, so DISTINCT is unaffected by it.
func (b *binder) intervalSortKey(n ast.Node, col int, items []selectItem, hidden []*expr.Expr) (int, []*expr.Expr, error) {
	var e *expr.Expr
	if col < len(items) {
		if items[col].srf != nil {
			return col, hidden, nil
		}
		e = items[col].e
	} else {
		e = hidden[col-len(items)]
	}
	if e == nil || e.Type.OID != types.OIDInterval {
		return col, hidden, nil
	}
	k, err := b.call(n, "$interval_key", e)
	if err != nil {
		return 0, nil, err
	}
	for i, h := range hidden {
		if sameExpr(h, k) {
			return len(items) + i, hidden, nil
		}
	}
	return len(items) + len(hidden), append(hidden, k), nil
}

// unitIntervals are MySQL's interval units as PostgreSQL interval text, for
// an interval plus or minus INTERVAL n unit.
var unitIntervals = map[ast.TimeUnitType]string{ast.TimeUnitMicrosecond: "00:00:00.000001", ast.TimeUnitSecond: "00:00:01",
	ast.TimeUnitMinute: "00:01:00", ast.TimeUnitHour: "01:00:00", ast.TimeUnitDay: "1 day", ast.TimeUnitWeek: "7 days",
	ast.TimeUnitMonth: "1 mon", ast.TimeUnitQuarter: "3 mons", ast.TimeUnitYear: "1 year"}

// intervalPlusUnits binds the interval iv plus (minus, sub) count units, as
// PostgreSQL adds iv + interval 'count unit': part by part.
func (b *binder) intervalPlusUnits(n ast.Node, iv, count *expr.Expr, unit ast.TimeUnitType, sub bool) (*expr.Expr, error) {
	one, ok := unitIntervals[unit]
	if !ok {
		return nil, b.errorf(ErrUnsupported, n, "INTERVAL ... %s is not supported", unit)
	}
	units, err := b.call(n, "$interval_mul", expr.Literal(types.Value{Type: types.IntervalType, Str: one}), expr.Cast(count, types.Float64Type))
	if err != nil {
		return nil, err
	}
	if sub {
		return b.call(n, "$interval_sub", iv, units)
	}
	return b.call(n, "$interval_add", iv, units)
}
