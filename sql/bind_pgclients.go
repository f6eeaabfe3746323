package sql

// The functions of the catalog queries the Python clients send (SQLAlchemy's
// reflection) beyond bind_pgfunc.go's: json_build_object, and regclass of a
// text that is not a constant.

import (
	"maps"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// bindClientFunc binds the functions of this file; ok is false for other
// names.
func (b *binder) bindClientFunc(ctx *exprCtx, n *ast.FuncCallExpr) (e *expr.Expr, ok bool, err error) {
	switch n.FnName.L {
	case "json_build_object":
		e, err := b.bindJSONBuildObject(ctx, n)
		return e, true, err
	}
	return nil, false, nil
}

// bindJSONBuildObject binds json_build_object(k1, v1, ...) as the text of
// the JSON object PostgreSQL builds, {"k1" : v1, ...}: numbers as they are,
// booleans true and false, NULL null, any other value a JSON string of its
// text. (Hummer has no json type: the result is text.)
func (b *binder) bindJSONBuildObject(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, error) {
	if len(n.Args)%2 != 0 {
		return nil, b.errorf(ErrInvalidValue, n, "argument list must have even number of elements")
	}
	text := func(s string) *expr.Expr { return expr.Literal(types.StringValue(s)) }
	out := text("{")
	for i := 0; i < len(n.Args); i += 2 {
		k, err := b.bindExpr(ctx, n.Args[i])
		if err != nil {
			return nil, err
		}
		v, err := b.bindExpr(ctx, n.Args[i+1])
		if err != nil {
			return nil, err
		}
		sep := ", "
		if i == 0 {
			sep = ""
		}
		key := expr.Call("$json_string", types.StringType, expr.Cast(k, types.StringType))
		val := jsonValue(v)
		for _, part := range []*expr.Expr{text(sep), key, text(" : "), val} {
			out = expr.Call("||", types.StringType, out, part)
		}
	}
	return expr.Call("||", types.StringType, out, text("}")), nil
}

// jsonValue is the JSON text of v, null when v is NULL.
func jsonValue(v *expr.Expr) *expr.Expr {
	null := expr.Literal(types.StringValue("null"))
	var j *expr.Expr
	switch v.Type.ID {
	case types.Null:
		return null
	case types.Bool:
		return expr.Call("case", types.StringType, expr.Call("is_null", types.BoolType, v), null,
			v, expr.Literal(types.StringValue("true")), expr.Literal(types.StringValue("false")))
	case types.Int64, types.Float64, types.Decimal:
		j = expr.Cast(v, types.StringType)
	default:
		j = expr.Call("$json_string", types.StringType, expr.Cast(v, types.StringType))
	}
	return expr.Call("coalesce", types.StringType, j, null)
}

// regclassOfText binds regclass(x) of a text x that is not a constant
// (SQLAlchemy's pg_get_serial_sequence(...)::regclass): CASE x WHEN name
// THEN oid ... END over the catalog's tables, NULL for another name
// (PostgreSQL would fail on a name that is no relation; the clients only
// ask about names the catalog gave them).
func (b *binder) regclassOfText(x *expr.Expr) *expr.Expr {
	oids := map[string]int64{}
	for _, t := range SystemTableNames() {
		oids[strings.TrimPrefix(t, PgCatalog+".")] = SystemOID(t)
	}
	if cat, ok := b.cat.(systemCatalogReader); ok {
		for _, t := range cat.Tables() {
			oids[t.Name], oids["public."+t.Name] = t.OID, t.OID
		}
	}
	x = expr.Cast(x, types.StringType)
	var args []*expr.Expr
	for _, name := range slices.Sorted(maps.Keys(oids)) {
		args = append(args, expr.Call("=", types.BoolType, x, expr.Literal(types.StringValue(name))),
			expr.Literal(types.IntValue(oids[name])))
	}
	return expr.Call("case", types.Int64Type, append(args, expr.Literal(types.NullValue(types.Int64Type)))...)
}

// pseudoTypeOIDs are PostgreSQL's oids of the pseudo-types clients name in
// catalog queries ('trigger'::regtype: pgcli's list of functions leaves out
// those returning trigger). No column has one, so pg_type does not list
// them.
var pseudoTypeOIDs = map[string]int64{"record": 2249, "void": 2278, "trigger": 2279, "event_trigger": 3838}

// regtypeCompared is x compared with other: x::regtype, bound as the type's
// name (format_type(x, NULL)) for display, compared with an oid (another
// regtype, 'trigger'::regtype) is x itself, as PostgreSQL compares regtypes
// by oid (pgcli's p.prorettype::regtype != 'trigger'::regtype).
func regtypeCompared(x, other *expr.Expr) *expr.Expr {
	if other.Type.ID != types.Int64 || x.Kind != expr.KindCall || x.Func != "format_type" || len(x.Args) != 2 ||
		x.Args[1].Kind != expr.KindLiteral || !x.Args[1].Value.Null {
		return x
	}
	return x.Args[0]
}

// subqueryName names a scalar subquery's output column as PostgreSQL does:
// by the subquery's one column ((SELECT max(id) FROM t) is max).
func (b *binder) subqueryName(n *ast.SubqueryExpr) string {
	sel, ok := n.Query.(*ast.SelectStmt)
	if !ok || sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.Fields.Fields[0].WildCard != nil {
		return "?column?"
	}
	f := sel.Fields.Fields[0]
	if f.AsName.O != "" {
		return b.aliasName(f.AsName.O)
	}
	return b.exprName(f.Expr)
}
