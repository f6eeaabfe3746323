package sql

// Several set-returning items over arrays in one select list, which
// PostgreSQL runs in lockstep (row i has each one's i-th value, NULL past a
// shorter one's end): SQLAlchemy's
//
//	SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix
//
// Each is a series of its array's positions (bindUnnestArray), so the
// select list runs one series, to the longest array's length, and each item
// is its array's element, or the position itself, at each step.

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// arraySeries reports whether srf and the set-returning items already in
// items are all series over arrays' positions, which run in lockstep.
func arraySeries(items []selectItem, srf *srfCall) bool {
	if srf.array == nil {
		return false
	}
	for _, it := range items {
		if it.srf != nil && it.srf.array == nil {
			return false
		}
	}
	return true
}

// srfItems returns the positions of items' set-returning items.
func srfItems(items []selectItem) []int {
	var at []int
	for i, it := range items {
		if it.srf != nil {
			at = append(at, i)
		}
	}
	return at
}

// bindGenerateSubscripts binds generate_subscripts(array, dim): the
// positions 1 to array_length(array, dim) of an array held as text.
func (b *binder) bindGenerateSubscripts(ctx *exprCtx, f *ast.FuncCallExpr) (*srfCall, *expr.Expr, error) {
	if len(f.Args) != 2 {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function generate_subscripts takes an array and a dimension")
	}
	arr, err := b.bindExpr(ctx, f.Args[0])
	if err != nil {
		return nil, nil, err
	}
	dim, err := b.bindExpr(ctx, f.Args[1])
	if err != nil {
		return nil, nil, err
	}
	if !accepts(types.StringType, arr.Type) || !accepts(types.Int64Type, dim.Type) {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function generate_subscripts(%s, %s) does not exist", arr.Type, dim.Type)
	}
	arr = expr.Cast(arr, types.StringType)
	hi := expr.Call("array_length", types.Int64Type, arr, expr.Cast(dim, types.Int64Type))
	return &srfCall{fn: "generate_series", extra: []*expr.Expr{hi, expr.Literal(types.IntValue(1))}, array: arr, subscripts: true,
		intElems: intArrayColumn(f.Args[0]), zeroBased: vectorColumn(f.Args[0])}, expr.Literal(types.IntValue(1)), nil
}

// arraysOutput is buildOutput's plan for the set-returning items srfs, all
// series over arrays: one series of positions 1 to the longest array's
// length, at the first one's column (Unnest), each array and its length
// beside it; then each item is its array's element at the position
// (unnest) or the position (generate_subscripts), NULL past its array's end.
func arraysOutput(input Plan, items []selectItem, exprs []*expr.Expr, out types.Schema, srfs []int) Plan {
	n := len(exprs)
	zero := expr.Literal(types.IntValue(0))
	var hi *expr.Expr
	wide := append(types.Schema{}, out...)
	wide = append(wide, types.Field{Name: "$hi", Type: types.Int64Type}, types.Field{Name: "$step", Type: types.Int64Type})
	var extra []*expr.Expr
	for _, i := range srfs {
		call := items[i].srf
		h := expr.Call("coalesce", types.Int64Type, call.extra[0], zero)
		if hi == nil {
			hi = h
		} else {
			hi = expr.Call("case", types.Int64Type, expr.Call(">=", types.BoolType, hi, h), hi, h)
		}
		wide = append(wide, types.Field{Name: "$array", Type: types.StringType}, types.Field{Name: "$len", Type: types.Int64Type})
		extra = append(extra, call.array, h)
	}
	wideExprs := append(append([]*expr.Expr{}, exprs...), hi, expr.Literal(types.IntValue(1)))
	wideExprs = append(wideExprs, extra...)
	var top Plan = &Project{Input: input, Exprs: wideExprs, Out: wide}
	top = &Unnest{Input: top, Col: srfs[0], Func: "generate_series", Hi: n, Step: n + 1, Out: wide}
	cols := columnsOf(wide[:n])
	pos := expr.Column(srfs[0], types.Int64Type, wide[srfs[0]].Name)
	for k, i := range srfs {
		arr := expr.Column(n+2+2*k, types.StringType, "$array")
		within := expr.Call("<=", types.BoolType, pos, expr.Column(n+3+2*k, types.Int64Type, "$len"))
		if call := items[i].srf; call.subscripts {
			sub := pos
			if call.zeroBased {
				sub = expr.Call("-", types.Int64Type, pos, expr.Literal(types.IntValue(1)))
			}
			cols[i] = expr.Call("case", types.Int64Type, within, sub, expr.Literal(types.NullValue(types.Int64Type)))
			out[i].Type = types.Int64Type
		} else {
			v := call.element(arr, pos)
			cols[i] = expr.Call("case", v.Type, within, v, expr.Literal(types.NullValue(v.Type)))
			out[i].Type = v.Type
			if call.intElems && call.elem == nil {
				cols[i], out[i].Type = expr.Cast(cols[i], types.Int64Type), types.Int64Type
			}
		}
	}
	return &Project{Input: top, Exprs: cols, Out: out}
}

// intArrayColumns are the names of the system catalog's columns whose
// arrays hold integers (pg_index.indkey, pg_constraint.conkey, ...), true
// for the vectors (int2vector, oidvector), whose subscripts start at 0.
var intArrayColumns = func() map[string]bool {
	m := map[string]bool{}
	for _, cols := range systemColumns {
		for _, c := range strings.Split(cols, ", ") {
			name, typ, _ := strings.Cut(c, " ")
			switch typ {
			case "int2vector", "oidvector":
				m[name] = true
			case "int2[]", "int4[]", "oid[]":
				if _, ok := m[name]; !ok {
					m[name] = false
				}
			}
		}
	}
	return m
}()

// vectorColumn reports whether n names a system catalog column that is an
// int2vector or oidvector, whose subscripts start at 0.
func vectorColumn(n ast.ExprNode) bool {
	c, ok := n.(*ast.ColumnNameExpr)
	return ok && intArrayColumns[c.Name.Name.L]
}

// intArrayColumn reports whether n names a column of the system catalog
// whose arrays hold integers, whose unnest is integers, as in PostgreSQL
// (Hummer holds such arrays as text: the column's name is what tells). A
// table of the user's with a column of that name holds text; arrays are
// not a type of Hummer's tables.
func intArrayColumn(n ast.ExprNode) bool {
	c, ok := n.(*ast.ColumnNameExpr)
	if !ok {
		return false
	}
	_, found := intArrayColumns[c.Name.Name.L]
	return found
}
