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
