package sql

// A FROM item of a correlated subquery that is several unnest and
// generate_subscripts of the enclosing query's arrays, in lockstep, as
// pgcli's list of foreign keys sends:
//
//	(SELECT array_agg(attname ORDER BY i) FROM (SELECT unnest(confkey) AS attnum,
//	    generate_subscripts(confkey, 1) AS i) x JOIN pg_attribute c USING (attnum) ...)
//
// Like bind_lateral.go's single series, it is a function of the subquery's
// domain D: each D row expanded into the positions 1 to the longest array's
// length, each column the element of its array at the position (unnest) or
// the position itself (generate_subscripts), NULL past its array's end.

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// lateralArrays returns the calls and column names of a derived table that
// is just SELECT unnest(a) AS x, generate_subscripts(a, 1) AS i, ... (two
// calls or more, or a generate_subscripts), reading columns that are not
// its own (it has none): the enclosing query's.
func lateralArrays(sel *ast.SelectStmt) ([]*ast.FuncCallExpr, []string, bool) {
	if sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil ||
		sel.Limit != nil || sel.Fields == nil || len(sel.Fields.Fields) == 0 {
		return nil, nil, false
	}
	var calls []*ast.FuncCallExpr
	var names []string
	subscripts, refs := false, false
	for _, fld := range sel.Fields.Fields {
		f, ok := fld.Expr.(*ast.FuncCallExpr)
		switch {
		case !ok:
			return nil, nil, false
		case f.FnName.L == "unnest" && len(f.Args) == 1:
		case f.FnName.L == "generate_subscripts" && len(f.Args) == 2:
			subscripts = true
		default:
			return nil, nil, false
		}
		f.Args[0].Accept(visitorFunc(func(n ast.Node) {
			if _, ok := n.(*ast.ColumnNameExpr); ok {
				refs = true
			}
		}))
		name := fld.AsName.O
		if name == "" {
			name = f.FnName.L
		}
		calls, names = append(calls, f), append(names, name)
	}
	return calls, names, refs && (subscripts || len(calls) > 1)
}

// bindLateralArrays binds such a FROM item as a placeholder of one row of
// NULLs, whose columns the subquery's scope later points at the arrays'
// values (lateralArraysDomain).
func (b *binder) bindLateralArrays(calls []*ast.FuncCallExpr, names []string, off int) *fromNode {
	b.laterals = append(b.laterals, lateralSeries{call: calls[0], at: off, arrays: calls})
	out := make(types.Schema, len(calls))
	row := make([]*expr.Expr, len(calls))
	for i, c := range calls {
		out[i] = types.Field{Name: names[i], Type: lateralArrayType(c)}
		row[i] = expr.Literal(types.NullValue(out[i].Type))
	}
	p := &Values{Rows: [][]*expr.Expr{row}, Out: out}
	return &fromNode{plan: p, off: off, n: len(calls), scope: schemaScope(out, "", off)}
}

// lateralArrayType is the type of a column of such an item: a position, or
// an element (an integer for the catalog's integer arrays).
func lateralArrayType(c *ast.FuncCallExpr) types.Type {
	if c.FnName.L == "generate_subscripts" || intArrayColumn(c.Args[0]) {
		return types.Int64Type
	}
	return types.StringType
}

// lateralArraysDomain is lateralDomain for such an item l: d's k columns,
// the position, then one column for each call; the scope's columns of the
// item (after D's, which start at at in ext) point at the last.
func (b *binder) lateralArraysDomain(ext *scope, at, k int, d Plan, l lateralSeries) (Plan, error) {
	ctx := &exprCtx{scope: ext, clause: "FROM"}
	bindArg := func(a ast.ExprNode, want types.Type) (*expr.Expr, error) {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, err
		}
		for _, c := range e.Columns(nil) {
			if c < at || c >= at+k {
				return nil, b.errorf(ErrUnsupported, a, "a set-returning FROM item may read the enclosing query's columns, not those of the FROM items beside it")
			}
		}
		if !accepts(want, e.Type) {
			return nil, b.errorf(ErrUnknownFunction, a, "function %s(%s) is not supported", l.call.FnName.L, e.Type)
		}
		return shiftColumns(expr.Cast(e, want), -at), nil
	}
	one, zero := expr.Literal(types.IntValue(1)), expr.Literal(types.IntValue(0))
	arrays, lens := make([]*expr.Expr, len(l.arrays)), make([]*expr.Expr, len(l.arrays))
	var hi *expr.Expr
	for i, c := range l.arrays {
		arr, err := bindArg(c.Args[0], types.StringType)
		if err != nil {
			return nil, err
		}
		dim := one
		if c.FnName.L == "generate_subscripts" {
			if dim, err = bindArg(c.Args[1], types.Int64Type); err != nil {
				return nil, err
			}
		}
		arrays[i] = arr
		lens[i] = expr.Call("coalesce", types.Int64Type, expr.Call("array_length", types.Int64Type, arr, dim), zero)
		if hi == nil {
			hi = lens[i]
		} else {
			hi = expr.Call("case", types.Int64Type, expr.Call(">=", types.BoolType, hi, lens[i]), hi, lens[i])
		}
	}
	ds := d.Schema()
	wide := append(append(types.Schema{}, ds...), types.Field{Name: "$series", Type: types.Int64Type},
		types.Field{Name: "$hi", Type: types.Int64Type}, types.Field{Name: "$step", Type: types.Int64Type})
	var p Plan = &Project{Input: d, Exprs: append(columnsOf(ds), one, hi, one), Out: wide}
	p = &Unnest{Input: p, Col: k, Func: "generate_series", Hi: k + 1, Step: k + 2, Outer: true, Out: wide}
	cols, out := columnsOf(wide[:k+1]), append(types.Schema{}, wide[:k+1]...)
	pos := cols[k]
	for i, c := range l.arrays {
		within := expr.Call("<=", types.BoolType, pos, lens[i])
		typ := lateralArrayType(c)
		v := pos
		if c.FnName.L == "unnest" {
			v = expr.Call("array_get", types.StringType, arrays[i], pos)
		} else if vectorColumn(c.Args[0]) {
			v = expr.Call("-", types.Int64Type, pos, one) // an int2vector's subscripts start at 0
		}
		cols = append(cols, expr.Call("case", typ, within, expr.Cast(v, typ), expr.Literal(types.NullValue(typ))))
		out = append(out, types.Field{Name: "$" + c.FnName.L, Type: typ})
	}
	p = &Project{Input: p, Exprs: cols, Out: out}
	// The NULL row of an empty series keeps its D value through the outer
	// join, unmatched: it is no row of the subquery's FROM.
	b.lateralCond = expr.Call("is_not_null", types.BoolType, expr.Column(at+k, types.Int64Type, "$series"))
	for i := range ext.cols {
		if j := ext.cols[i].idx - l.at; j >= 0 && j < len(l.arrays) && !ext.cols[i].outer {
			ext.cols[i].idx = at + k + 1 + j
			ext.cols[i].typ = out[k+1+j].Type
		}
	}
	return p, nil
}

// lateralJoinConds takes out of the inner joins of a correlated subquery's
// FROM (root) their ON and USING conditions that read a lateral item's
// columns, bound to its placeholder row when the join was, and returns them
// reading the item's columns where lateralDomain put them (from series on,
// after D's columns): the subquery's WHERE, which joins its FROM to the
// expanded domain, applies them there, as an inner join's condition may be.
func (b *binder) lateralJoinConds(root *fromNode, series int) []*expr.Expr {
	moved := map[int]int{} // placeholder position -> the item's column
	for _, l := range b.laterals {
		switch {
		case l.arrays != nil:
			for j := range l.arrays {
				moved[l.at+j] = series + 1 + j
			}
		case l.call.FnName.L == "unnest":
			moved[l.at] = series + 1
		default:
			moved[l.at] = series
		}
	}
	var out []*expr.Expr
	var walk func(node *fromNode)
	walk = func(node *fromNode) {
		if node == nil || node.plan != nil {
			return
		}
		walk(node.left)
		walk(node.right)
		if node.kind != fromInner {
			return
		}
		keep := node.conds[:0:0]
		for _, c := range node.conds {
			reads, m := false, map[int]int{}
			for _, col := range c.Columns(nil) {
				m[col] = col
				if to, ok := moved[col]; ok {
					reads, m[col] = true, to
				}
			}
			if !reads {
				keep = append(keep, c)
				continue
			}
			out = append(out, c.Remap(m))
		}
		node.conds = keep
	}
	walk(root)
	return out
}
