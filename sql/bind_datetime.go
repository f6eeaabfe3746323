package sql

import (
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Date and time syntax over timestamps (exec/expr/datetime.go):
//
//	EXTRACT(field FROM ts), YEAR(ts), MONTH(ts), ...   $date_part(field, ts), a bigint
//	ts + INTERVAL n unit, ts - INTERVAL n unit         $add_micros / $add_months
//	  (DATE_ADD, DATE_SUB; PostgreSQL's INTERVAL '90' DAY too)
//	NOW(), CURRENT_TIMESTAMP, LOCALTIMESTAMP           the statement's start
//	CURRENT_DATE                                       its date
//
// and the arithmetic of dates (dateArith): date ± integer days is a date, date
// - date the days between, date ± INTERVAL a timestamp, as in PostgreSQL.

// datePartOf maps MySQL's functions of one field to the field.
var datePartOf = map[string]string{"year": "year", "quarter": "quarter", "month": "month", "week": "week",
	"day": "day", "dayofmonth": "day", "dayofyear": "doy", "hour": "hour", "minute": "minute", "second": "second"}

// microsPer is the length of the fixed interval units, in microseconds.
var microsPer = map[ast.TimeUnitType]int64{
	ast.TimeUnitMicrosecond: 1, ast.TimeUnitSecond: 1e6, ast.TimeUnitMinute: 60e6,
	ast.TimeUnitHour: 3600e6, ast.TimeUnitDay: 86400e6, ast.TimeUnitWeek: 7 * 86400e6,
}

// monthsPer is the length of the calendar interval units, in months.
var monthsPer = map[ast.TimeUnitType]int64{ast.TimeUnitMonth: 1, ast.TimeUnitQuarter: 3, ast.TimeUnitYear: 12}

// addInterval is ts + INTERVAL count unit (ts - ..., with sub): count a
// bigint, ts a timestamp.
func (b *binder) addInterval(n ast.Node, ts, count *expr.Expr, unit ast.TimeUnitType, sub bool) (*expr.Expr, error) {
	var err error
	if sub {
		if count, err = b.call(n, "neg", count); err != nil {
			return nil, err
		}
	}
	fn, per := "$add_micros", microsPer[unit]
	if m := monthsPer[unit]; m > 0 {
		fn, per = "$add_months", m
	}
	if per == 0 {
		return nil, b.errorf(ErrUnsupported, n, "INTERVAL ... %s is not supported", unit)
	}
	if per != 1 {
		if count, err = b.call(n, "*", count, expr.Literal(types.IntValue(per))); err != nil {
			return nil, err
		}
	}
	return b.call(n, fn, ts, count)
}

// bindDateTime binds the date and time forms above; ok is false for a form
// it does not know (the caller goes on as for any function).
func (b *binder) bindDateTime(ctx *exprCtx, n *ast.FuncCallExpr, name string) (*expr.Expr, bool, error) {
	if name == "timezone" && len(n.Args) == 2 {
		e, err := b.bindAtTimeZone(ctx, n) // bind_timezone.go
		return e, true, err
	}
	switch name {
	case "now", "current_timestamp", "localtimestamp", "current_date", "curdate":
		if len(n.Args) > 0 {
			return nil, false, nil
		}
		if b.now.IsZero() {
			b.now = time.Now()
		}
		us := b.now.UnixMicro()
		if loc, err := types.Zone(b.timeZone()); err == nil && (name != "now" && name != "current_timestamp") {
			us += int64(types.ZoneOffset(loc, us)) * 1e6 // the wall clock in the session's zone
		}
		if name == "current_date" || name == "curdate" {
			day := int64(86400e6)
			return expr.Literal(types.DateValue(us - us%day)), true, nil
		}
		if name == "localtimestamp" {
			return expr.Literal(types.TimestampValue(us)), true, nil
		}
		// timestamp with time zone, as PostgreSQL's.
		return expr.Literal(types.Value{Type: types.TimestamptzType, Int: us}), true, nil
	case "extract":
		if len(n.Args) != 2 {
			return nil, false, nil
		}
		unit, ok := n.Args[0].(*ast.TimeUnitExpr)
		if !ok {
			return nil, false, nil
		}
		field := strings.ToLower(unit.Unit.String())
		if _, fixed := microsPer[unit.Unit]; !fixed && monthsPer[unit.Unit] == 0 {
			return nil, true, b.errorf(ErrUnsupported, n, "EXTRACT(%s FROM ...) is not supported", unit.Unit)
		}
		e, err := b.timestampArg(ctx, n.Args[1])
		if err == nil && field != "epoch" {
			e, err = b.zonedTimestamp(n, e) // the wall clock's fields
		}
		if err != nil {
			return nil, true, err
		}
		if field == "second" { // with its fraction, a numeric, as PostgreSQL's
			r, err := b.call(n, "$date_part_seconds", e)
			return r, true, err
		}
		r, err := b.call(n, "$date_part", expr.Literal(types.StringValue(field)), e)
		return r, true, err
	case "date_add", "date_sub", "adddate", "subdate":
		if len(n.Args) != 3 {
			return nil, false, nil
		}
		unit, ok := n.Args[2].(*ast.TimeUnitExpr)
		if !ok {
			return nil, false, nil
		}
		x, err := b.bindExpr(ctx, n.Args[0])
		if err != nil {
			return nil, true, err
		}
		count, err := b.bindExpr(ctx, n.Args[1])
		if err != nil {
			return nil, true, err
		}
		if count.Type.ID == types.String || count.Type.ID == types.Null {
			count = expr.Cast(count, types.Int64Type) // INTERVAL '90' DAY
		}
		if count.Type.ID != types.Int64 {
			return nil, true, b.errorf(ErrType, n.Args[1], "an interval of %s is not supported: use a whole number", count.Type)
		}
		sub := name == "date_sub" || name == "subdate"
		if x.Type.OID == types.OIDInterval {
			// iv + INTERVAL '1 hour' (psycopg2 sends a timedelta as
			// '...'::interval): interval arithmetic, not a date's.
			r, err := b.intervalPlusUnits(n, x, count, unit.Unit, sub)
			return r, true, err
		}
		ts, err := b.asTimestamp(n.Args[0], x)
		if err != nil {
			return nil, true, err
		}
		r, err := b.addInterval(n, ts, count, unit.Unit, sub)
		return r, true, err
	}
	if name == "datediff" && len(n.Args) == 2 {
		// MySQL's DATEDIFF(a, b): the days from b's date to a's.
		a, err := b.timestampArg(ctx, n.Args[0])
		if err != nil {
			return nil, true, err
		}
		c, err := b.timestampArg(ctx, n.Args[1])
		if err != nil {
			return nil, true, err
		}
		day := func(e *expr.Expr) *expr.Expr { return expr.Cast(expr.Cast(e, types.DateType), types.TimestampType) }
		r, err := b.call(n, "$days_between", day(a), day(c))
		return r, true, err
	}
	if (name == "to_char" || name == "date_format") && len(n.Args) == 2 {
		e, err := b.timestampArg(ctx, n.Args[0])
		if err == nil {
			e, err = b.zonedTimestamp(n, e)
		}
		if err != nil {
			return nil, true, err
		}
		tmpl, err := b.bindExpr(ctx, n.Args[1])
		if err != nil {
			return nil, true, err
		}
		r, err := b.call(n, name, e, tmpl)
		return r, true, err
	}
	if name == "date_trunc" && len(n.Args) == 2 {
		unit, err := b.bindExpr(ctx, n.Args[0])
		if err != nil {
			return nil, true, err
		}
		e, err := b.timestampArg(ctx, n.Args[1])
		if err != nil {
			return nil, true, err
		}
		tz := e.Type.OID == types.OIDTimestamptz
		if e, err = b.zonedTimestamp(n, e); err != nil { // truncated on the wall clock
			return nil, true, err
		}
		r, err := b.call(n, "date_trunc", unit, e)
		if err == nil && tz {
			r, err = b.zonedCast(n, r, types.TimestamptzType)
		}
		return r, true, err
	}
	if name == "date_part" && len(n.Args) == 2 {
		// date_part('field', x): the field a literal.
		f, err := b.bindExpr(ctx, n.Args[0])
		if err != nil {
			return nil, true, err
		}
		if f.Kind != expr.KindLiteral || f.Type.ID != types.String {
			return nil, true, b.errorf(ErrUnsupported, n.Args[0], "the field of date_part must be a text constant")
		}
		e, err := b.timestampArg(ctx, n.Args[1])
		if err != nil {
			return nil, true, err
		}
		f = expr.Literal(types.StringValue(strings.ToLower(f.Value.Str)))
		if f.Value.Str != "epoch" {
			if e, err = b.zonedTimestamp(n, e); err != nil {
				return nil, true, err
			}
		}
		if f.Value.Str == "epoch" { // with microseconds, a numeric
			r, err := b.call(n, "$date_part_epoch", e)
			return r, true, err
		}
		r, err := b.call(n, "$date_part", f, e)
		return r, true, err
	}
	field, ok := datePartOf[name]
	if !ok || len(n.Args) != 1 {
		return nil, false, nil
	}
	e, err := b.timestampArg(ctx, n.Args[0])
	if err == nil {
		e, err = b.zonedTimestamp(n, e)
	}
	if err != nil {
		return nil, true, err
	}
	r, err := b.call(n, "$date_part", expr.Literal(types.StringValue(field)), e)
	return r, true, err
}

// timestampArg binds a timestamp argument; a text one is cast (a literal
// checked now).
func (b *binder) timestampArg(ctx *exprCtx, n ast.ExprNode) (*expr.Expr, error) {
	e, err := b.bindExpr(ctx, n)
	if err != nil {
		return nil, err
	}
	return b.asTimestamp(n, e)
}

// asTimestamp is timestampArg's conversion of the bound argument e.
func (b *binder) asTimestamp(n ast.ExprNode, e *expr.Expr) (*expr.Expr, error) {
	switch e.Type.ID {
	case types.Timestamp:
		return e, nil
	case types.Date:
		return expr.Cast(e, types.TimestampType), nil // its midnight
	case types.String, types.Null:
		c := expr.Cast(e, types.TimestampType)
		if e.Kind == expr.KindLiteral {
			v, err := expr.EvalConst(c)
			if err != nil {
				return nil, b.errorf(ErrInvalidValue, n, "%s", err.Error())
			}
			return expr.Literal(v), nil
		}
		return c, nil
	}
	return nil, b.errorf(ErrType, n, "a timestamp is wanted here, not %s", e.Type)
}

// dateArith binds date + n, n + date, date - n (whole days: a date) and
// date - date (the days between: a bigint); ok is false for other operands.
func (b *binder) dateArith(n ast.Node, fn string, l, r *expr.Expr) (*expr.Expr, bool, error) {
	if fn != "+" && fn != "-" {
		return nil, false, nil
	}
	ld, rd := l.Type.ID == types.Date, r.Type.ID == types.Date
	isInt := func(e *expr.Expr) bool { return e.Type.ID == types.Int64 }
	switch {
	case ld && rd && fn == "-":
		e, err := b.call(n, "$days_between", expr.Cast(l, types.TimestampType), expr.Cast(r, types.TimestampType))
		return e, true, err
	case fn == "+" && isInt(l) && rd:
		l, r = r, l
		fallthrough
	case ld && isInt(r):
		days := r
		var err error
		if fn == "-" {
			if days, err = b.call(n, "neg", days); err != nil {
				return nil, true, err
			}
		}
		micros, err := b.call(n, "*", days, expr.Literal(types.IntValue(86400e6)))
		if err != nil {
			return nil, true, err
		}
		e, err := b.call(n, "$add_micros", expr.Cast(l, types.TimestampType), micros)
		if err != nil {
			return nil, true, err
		}
		return expr.Cast(e, types.DateType), true, nil
	}
	return nil, false, nil
}
