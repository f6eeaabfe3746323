package sql

// PostgreSQL's types the engine holds as one of its own (exec/types'
// pgtypes.go), where the binder tells them apart: a regclass is an oid that
// prints as its relation's name, which only the catalog knows.

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// regclassName binds regclass x as text: the name of the relation of oid x
// (unqualified: every schema Hummer has is on the search path), the oid's
// digits for an oid no relation has, as regclassout prints them.
func (b *binder) regclassName(x *expr.Expr) *expr.Expr {
	names := map[int64]string{}
	for _, t := range SystemTableNames() {
		names[SystemOID(t)] = t[strings.IndexByte(t, '.')+1:]
	}
	if cat, ok := b.cat.(systemCatalogReader); ok {
		for _, t := range cat.Tables() {
			names[t.OID] = expr.QuoteIdent(t.Name)
		}
	}
	e, _, _ := b.oidNames(nil, expr.Cast(x, types.Int64Type), names, "oid")
	return e
}

// outputNames makes a statement's regclass columns the relations' names, as
// PostgreSQL sends them (still described as regclass): below the statement's
// top they stay oids, to compare and join as oids.
func (b *binder) outputNames(p Plan) Plan {
	out := p.Schema()
	i := 0
	for i < len(out) && out[i].Type.OID != types.OIDRegclass {
		i++
	}
	if i == len(out) {
		return p
	}
	proj := &Project{Input: p, Exprs: make([]*expr.Expr, len(out)), Out: make(types.Schema, len(out))}
	for i, f := range out {
		proj.Exprs[i], proj.Out[i] = expr.Column(i, f.Type, f.Name), f
		if f.Type.OID == types.OIDRegclass {
			proj.Out[i].Type = types.Type{ID: types.String, OID: types.OIDRegclass}
			proj.Exprs[i] = expr.Cast(b.regclassName(proj.Exprs[i]), proj.Out[i].Type)
		}
	}
	return proj
}

// heldFunc is the function fn stands for over args of types held as another
// where that differs from fn over the holding types: length of a bytea
// counts its bytes, not characters.
func heldFunc(fn string, args []*expr.Expr) string {
	if fn == "length" && len(args) == 1 && args[0].Type.OID == types.OIDBytea {
		return "octet_length"
	}
	return fn
}

// intervalArith binds timestamp + interval, interval + timestamp and
// timestamp - interval (a date is its midnight): the interval's months
// added first, then its days and time, as PostgreSQL's timestamp_pl_interval
// does in UTC, where a day is 24 hours. ok is false for other operands.
func (b *binder) intervalArith(n ast.Node, fn string, l, r *expr.Expr) (e *expr.Expr, ok bool, err error) {
	if fn != "+" && fn != "-" {
		return nil, false, nil
	}
	ts, iv := l, r
	if fn == "+" && l.Type.OID == types.OIDInterval {
		ts, iv = r, l
	}
	if iv.Type.OID != types.OIDInterval || ts.Type.ID != types.Timestamp && ts.Type.ID != types.Date {
		return nil, false, nil
	}
	tz := ts.Type.OID == types.OIDTimestamptz
	if tz && b.timeZone() != "" {
		return b.zonedIntervalArith(n, fn, ts, iv)
	}
	ts = expr.Cast(ts, types.TimestampType)
	months, err := b.call(n, "$interval_months", iv)
	if err != nil {
		return nil, true, err
	}
	micros, err := b.call(n, "$interval_micros", iv)
	if err != nil {
		return nil, true, err
	}
	if fn == "-" {
		if months, err = b.call(n, "neg", months); err != nil {
			return nil, true, err
		}
		if micros, err = b.call(n, "neg", micros); err != nil {
			return nil, true, err
		}
	}
	if e, err = b.call(n, "$add_months", ts, months); err != nil {
		return nil, true, err
	}
	if e, err = b.call(n, "$add_micros", e, micros); err != nil {
		return nil, true, err
	}
	if tz {
		e = expr.Cast(e, types.TimestamptzType)
	}
	return e, true, nil
}

// castFuncs are the casts the dialect layer writes as function calls
// (dialect_rewrites.go's funcCasts): x::regclass is regclass(x).
var castFuncs = map[string]bool{"regclass": true, "bool": true, "timestamptz": true, "bytea": true, "interval": true, "numeric": true}

// unconstrainedNumeric binds x::numeric without a precision, which keeps
// the value's scale in PostgreSQL, as a decimal of the scale x needs: a
// decimal as it is, an integer of scale 0, a constant text of the digits it
// has after its point. A double stays one (a decimal has one scale for all
// rows; a double prints its value as numeric would), as does text that is
// not a constant, read with scale 16.
func (b *binder) unconstrainedNumeric(n ast.Node, x *expr.Expr) (*expr.Expr, error) {
	switch x.Type.ID {
	case types.Decimal, types.Float64:
		return x, nil
	case types.Int64, types.Null:
		return expr.Cast(x, types.DecimalType(38, 0)), nil
	case types.String:
		scale := 16
		if x.Kind == expr.KindLiteral && !x.Value.Null {
			s := strings.TrimSpace(x.Value.Str)
			scale = 0
			if _, frac, ok := strings.Cut(s, "."); ok {
				scale = min(len(frac)-len(strings.TrimLeft(frac, "0123456789")), 38) // its digits

			}
		}
		return expr.Cast(x, types.DecimalType(38, scale)), nil
	}
	return nil, b.errorf(ErrType, n, "cannot cast type %s to numeric", x.Type)
}

// funcCastName names a select item that is one of castFuncs as PostgreSQL
// names a cast (FigureColname): the name of what is cast when that is a
// column or a function call (c.oid::regclass is oid), else the type's
// ('docs'::regclass is regclass). ok is false for other calls. (A
// function-style cast written as such, regclass(c.oid), PostgreSQL names
// regclass; the dialect's cannot be told from it.)
func (b *binder) funcCastName(n *ast.FuncCallExpr) (string, bool) {
	if !castFuncs[n.FnName.L] || len(n.Args) != 1 {
		return "", false
	}
	if name := b.exprName(n.Args[0]); name != "?column?" && !b.namedByType(n.Args[0]) {
		return name, true
	}
	return n.FnName.L, true
}

// namedByType reports whether select item n takes its name from a type it
// is cast to, a name an enclosing cast's type replaces, as in PostgreSQL
// ('docs'::regclass::text is text).
func (b *binder) namedByType(n ast.ExprNode) bool {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return b.namedByType(n.Expr)
	case *ast.FuncCastExpr:
		name := b.exprName(n.Expr)
		return name == "?column?" || b.namedByType(n.Expr)
	case *ast.FuncCallExpr:
		if !castFuncs[n.FnName.L] || len(n.Args) != 1 {
			return false
		}
		name := b.exprName(n.Args[0])
		return name == "?column?" || b.namedByType(n.Args[0])
	}
	return false
}

// isArrayAgg reports whether n is what the dialect layer writes for
// array_agg(x) (rewriteArrayAgg): '{' || GROUP_CONCAT(... array_element(x)
// ...) || '}', which PostgreSQL's array_agg names its column array_agg.
func isArrayAgg(n ast.ExprNode) bool {
	found := false
	var walk func(n ast.ExprNode, depth int)
	walk = func(n ast.ExprNode, depth int) {
		switch n := n.(type) {
		case *ast.FuncCallExpr:
			if n.FnName.L == "concat" && depth < 3 {
				for _, a := range n.Args {
					walk(a, depth+1)
				}
			}
		case *ast.AggregateFuncExpr:
			if strings.EqualFold(n.F, ast.AggFuncGroupConcat) && len(n.Args) > 0 {
				arg := n.Args[0]
				if c, ok := arg.(*ast.FuncCallExpr); ok && c.FnName.L == "coalesce" && len(c.Args) == 2 {
					arg = c.Args[0]
				}
				c, ok := arg.(*ast.FuncCallExpr)
				found = found || ok && c.FnName.L == "array_element"
			}
		}
	}
	walk(n, 0)
	return found
}

// castTypeFact is the type of CAST n as PostgreSQL reads the name the
// dialect layer saw written (dialectFacts.castNames), where the parser's
// type, to, is MySQL's: x::integer is an integer, not a bigint;
// CAST(x AS varchar(5)) a character varying(5).
func (b *binder) castTypeFact(n *ast.FuncCastExpr, to types.Type) types.Type {
	if b.facts.empty() {
		return to
	}
	name, ok := b.facts.castNames[n.OriginTextPosition()]
	if !ok {
		return to
	}
	switch name {
	case "int2":
		return types.Int2Type
	case "int4":
		return types.Int4Type
	case "int8":
		return types.Int64Type
	case "oid":
		return types.OidType
	case "float4":
		return types.Float4Type
	case "float8":
		return types.Float64Type
	case "varchar":
		return types.VarcharType(n.Tp.GetFlen())
	case "bpchar":
		if n.Tp.GetFlen() > 0 {
			return types.BpcharType(n.Tp.GetFlen())
		}
	}
	return to
}

// arithType is the type PostgreSQL gives the arithmetic fn (+, -, *, /, %,
// neg) over args where the engine computes it as result, a bigint or a
// double: the wider of two smallint or integer operands (an integer
// constant is an integer where it fits, as PostgreSQL types it), real over
// two reals. ok is false where the result stays the engine's: an operand
// is a bigint or a double. The binder
// casts the result to the type, which fails as PostgreSQL's operators do
// past its range (exec/expr's narrowTo: "integer out of range").
func arithType(fn string, args []*expr.Expr, result types.Type) (t types.Type, ok bool) {
	switch fn {
	case "+", "-", "*", "/", "%", "neg":
	default:
		return types.Type{}, false
	}
	switch result.Base() { // (a resolver may give two smallints' type)
	case types.Int64Type:
		width := types.Int2Type
		for _, a := range args {
			switch a.Type {
			case types.Int2Type:
			case types.Int4Type:
				width = types.Int4Type
			default:
				return types.Type{}, false
			}
		}
		return width, true
	case types.Float64Type:
		for _, a := range args {
			if a.Type != types.Float4Type {
				return types.Type{}, false
			}
		}
		return types.Float4Type, true
	}
	return types.Type{}, false
}
