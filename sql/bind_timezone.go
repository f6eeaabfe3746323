package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// A timestamp with time zone is an instant (UTC microseconds); what depends
// on the session's TimeZone is how it reads from and turns into wall-clock
// time. Those conversions bind to the functions of exec/expr/pgzone.go with
// the zone as a constant argument, so that a plan computes them as the
// session that made it would, wherever its tasks run. In UTC they are the
// plain casts.

// timeZone returns the session's TimeZone, "" for UTC or when the statement
// has no session (a view or job bound again at a restart).
func (b *binder) timeZone() string {
	if b.session == nil || b.session.Settings == nil {
		return ""
	}
	tz, err := b.session.Settings.Setting("TimeZone")
	if err != nil || strings.EqualFold(tz, "UTC") {
		return ""
	}
	return tz
}

// zonedCast returns x cast to t in the session's time zone: text or a
// timestamp or date to timestamp with time zone read as wall time there, a
// timestamp with time zone to a timestamp, date or text as its wall time
// there. Other casts are expr.Cast's.
func (b *binder) zonedCast(n ast.Node, x *expr.Expr, t types.Type) (*expr.Expr, error) {
	tz := b.timeZone()
	fromTZ, toTZ := x.Type.OID == types.OIDTimestamptz, t.OID == types.OIDTimestamptz
	if tz == "" || fromTZ == toTZ || x.Type.ID == types.Null {
		return expr.Cast(x, t), nil
	}
	zone := expr.Literal(types.StringValue(tz))
	switch {
	case toTZ && x.Type.ID == types.String:
		return b.call(n, "$timestamptz_in", x, zone)
	case toTZ && (x.Type.ID == types.Timestamp || x.Type.ID == types.Date):
		return b.call(n, "$tz_from_local", expr.Cast(x, types.TimestampType), zone)
	case fromTZ && t.ID == types.String && t.OID == 0:
		return b.call(n, "$tz_text", x, zone)
	case fromTZ && (t.ID == types.Timestamp || t.ID == types.Date):
		local, err := b.call(n, "$tz_to_local", x, zone)
		if err != nil {
			return nil, err
		}
		return expr.Cast(local, t), nil
	}
	return expr.Cast(x, t), nil
}

// zonedTimestamp returns a timestamp with time zone x as the wall time in
// the session's zone, which date_trunc and EXTRACT work on; other values
// are returned as they are.
func (b *binder) zonedTimestamp(n ast.Node, x *expr.Expr) (*expr.Expr, error) {
	if x.Type.OID != types.OIDTimestamptz || b.timeZone() == "" {
		return x, nil
	}
	return b.zonedCast(n, x, types.TimestampType)
}

// bindAtTimeZone binds timezone(zone, x), which is also what x AT TIME ZONE
// zone reads as (the dialect layer): a timestamp with time zone (or text,
// or a date, read as one in the session's zone) becomes the wall time in
// zone, a timestamp the instant when the wall clock in zone shows it.
func (b *binder) bindAtTimeZone(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, error) {
	zone, err := b.bindExpr(ctx, n.Args[0])
	if err != nil {
		return nil, err
	}
	x, err := b.bindExpr(ctx, n.Args[1])
	if err != nil {
		return nil, err
	}
	if zone.Type.ID != types.String && zone.Type.ID != types.Null {
		return nil, b.errorf(ErrUnsupported, n.Args[0], "a time zone is given as text here, not %s", zone.Type)
	}
	switch {
	case x.Type.ID == types.Timestamp && x.Type.OID != types.OIDTimestamptz:
		return b.call(n, "$tz_from_local", x, zone)
	case x.Type.ID == types.Timestamp, x.Type.ID == types.String, x.Type.ID == types.Date, x.Type.ID == types.Null:
		if x, err = b.zonedCast(n, x, types.TimestamptzType); err != nil {
			return nil, err
		}
		return b.call(n, "$tz_to_local", x, zone)
	}
	return nil, b.errorf(ErrUnknownFunction, n, "function timezone(text, %s) does not exist", x.Type)
}

// zonedIntervalArith binds timestamptz + interval (and -) in a session zone
// other than UTC as PostgreSQL's timestamptz_pl_interval computes it: the
// months and days on the wall clock there (a day across a change to summer
// time is 23 hours), then the time as elapsed microseconds.
func (b *binder) zonedIntervalArith(n ast.Node, fn string, ts, iv *expr.Expr) (*expr.Expr, bool, error) {
	part := func(name string) (*expr.Expr, error) {
		e, err := b.call(n, name, iv)
		if err == nil && fn == "-" {
			e, err = b.call(n, "neg", e)
		}
		return e, err
	}
	months, err := part("$interval_months")
	if err != nil {
		return nil, true, err
	}
	days, err := part("$interval_days")
	if err != nil {
		return nil, true, err
	}
	elapsed, err := part("$interval_time")
	if err != nil {
		return nil, true, err
	}
	zone := expr.Literal(types.StringValue(b.timeZone()))
	e, err := b.call(n, "$tz_to_local", ts, zone)
	if err == nil {
		e, err = b.call(n, "$add_months", e, months)
	}
	if err == nil {
		e, err = b.call(n, "$add_micros", e, days)
	}
	if err == nil {
		e, err = b.call(n, "$tz_from_local", e, zone)
	}
	if err == nil {
		e, err = b.call(n, "$add_micros", e, elapsed)
	}
	if err != nil {
		return nil, true, err
	}
	return expr.Cast(e, types.TimestamptzType), true, nil
}

// zoneField binds date_part('timezone' | 'timezone_hour' | 'timezone_minute',
// x), EXTRACT(TIMEZONE FROM x): the session zone's offset from UTC at the
// timestamp with time zone x, in seconds, its hours, or its minutes past
// them (negative west of Greenwich, as PostgreSQL's).
func (b *binder) zoneField(n ast.Node, field string, x *expr.Expr) (*expr.Expr, error) {
	if x.Type.OID != types.OIDTimestamptz {
		return nil, b.errorf(ErrUnsupported, n, "unit \"%s\" not supported for type %s", field, x.Type)
	}
	zone := b.timeZone()
	if zone == "" {
		zone = "UTC"
	}
	off, err := b.call(n, "$tz_offset", x, expr.Literal(types.StringValue(zone)))
	if err != nil {
		return nil, err
	}
	switch field {
	case "timezone":
		return off, nil
	case "timezone_hour":
		return b.call(n, "/", off, expr.Literal(types.IntValue(3600)))
	case "timezone_minute":
		m, err := b.call(n, "/", off, expr.Literal(types.IntValue(60)))
		if err != nil {
			return nil, err
		}
		return b.call(n, "%", m, expr.Literal(types.IntValue(60)))
	}
	return nil, b.errorf(ErrUnsupported, n, "unit \"%s\" not recognized for type timestamp with time zone", field)
}
