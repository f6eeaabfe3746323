package sql

// A set-returning FROM item of a correlated subquery whose arguments read
// the enclosing query (PostgreSQL's implicitly LATERAL functions), as psql's
// \d sends: (SELECT string_agg(attname, ', ') FROM generate_series(0,
// array_upper(pr.prattrs, 1)) s, pg_attribute WHERE attnum = prattrs[s]).
// The dialect layer makes generate_series(...) s a derived table of the
// select item; its rows depend on the enclosing row, so it is not bound on
// its own. It is a function of the subquery's domain D (bind_correlated.go)
// instead: D's rows, each expanded into its series (one row of NULL for an
// empty series, so that no D value is lost to the outer join an aggregate
// needs), are what the subquery's FROM is joined to, in place of D.

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// lateralSeries is such a FROM item while its subquery is bound: call is
// its generate_series, at the FROM position of its one column.
type lateralSeries struct {
	call *ast.FuncCallExpr
	at   int
	// arrays, for a FROM item of several unnest and generate_subscripts
	// (bind_lateral_arrays.go), are its calls; call is the first.
	arrays []*ast.FuncCallExpr
}

// lateralCall returns the generate_series call of a derived table that is
// just SELECT generate_series(...) AS x, if one of its arguments reads a
// column that is not its own (it has none): the enclosing query's.
func lateralCall(sel *ast.SelectStmt) (*ast.FuncCallExpr, bool) {
	if sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil ||
		sel.Limit != nil || sel.Fields == nil || len(sel.Fields.Fields) != 1 {
		return nil, false
	}
	f, ok := sel.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	if !ok || f.FnName.L != "generate_series" && f.FnName.L != "unnest" {
		return nil, false
	}
	refs := false
	for _, a := range f.Args {
		a.Accept(visitorFunc(func(n ast.Node) {
			if _, ok := n.(*ast.ColumnNameExpr); ok {
				refs = true
			}
		}))
	}
	return f, refs
}

// visitorFunc visits every node of a tree, subqueries' too.
type visitorFunc func(ast.Node)

func (v visitorFunc) Enter(n ast.Node) (ast.Node, bool) { v(n); return n, false }
func (v visitorFunc) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// bindLateralItem binds a lateral series FROM item as a placeholder of one
// row and one NULL column, whose name the subquery's scope later points at
// the series (lateralDomain).
func (b *binder) bindLateralItem(call *ast.FuncCallExpr, name string, off int) *fromNode {
	b.laterals = append(b.laterals, lateralSeries{call: call, at: off})
	typ := types.Int64Type
	if call.FnName.L == "unnest" {
		typ = types.StringType
	}
	out := types.Schema{{Name: name, Type: typ}}
	p := &Values{Rows: [][]*expr.Expr{{expr.Literal(types.NullValue(typ))}}, Out: out}
	return &fromNode{plan: p, off: off, n: 1, scope: schemaScope(out, "", off)}
}

// lateralDomain returns the subquery's domain expanded by its lateral item
// (d's k columns, then the series' positions, then for unnest the
// elements), and points the scope's column of the item at it, after D's
// columns in ext (which start at at).
func (b *binder) lateralDomain(ext *scope, at, k int, d Plan) (Plan, error) {
	if len(b.laterals) != 1 {
		return nil, b.errorf(ErrUnsupported, b.laterals[1].call, "only one set-returning FROM item per correlated subquery is supported")
	}
	l := b.laterals[0]
	if l.arrays != nil {
		return b.lateralArraysDomain(ext, at, k, d, l) // bind_lateral_arrays.go
	}
	unnest := l.call.FnName.L == "unnest"
	switch {
	case unnest && len(l.call.Args) != 1:
		return nil, b.errorf(ErrUnknownFunction, l.call, "unnest as a FROM item takes one array")
	case !unnest && (len(l.call.Args) < 2 || len(l.call.Args) > 3):
		return nil, b.errorf(ErrUnknownFunction, l.call, "function generate_series takes 2 or 3 arguments")
	}
	bound := make([]*expr.Expr, len(l.call.Args))
	for i, a := range l.call.Args {
		e, err := b.bindExpr(&exprCtx{scope: ext, clause: "FROM"}, a)
		if err != nil {
			return nil, err
		}
		for _, c := range e.Columns(nil) {
			if c < at || c >= at+k {
				return nil, b.errorf(ErrUnsupported, a, "a set-returning FROM item may read the enclosing query's columns, not those of the FROM items beside it")
			}
		}
		want := types.Int64Type
		if unnest {
			want = types.StringType
		}
		if e.Type.Base() != want && e.Type.ID != types.Null {
			return nil, b.errorf(ErrUnknownFunction, l.call, "function %s(%s) is not supported", l.call.FnName.L, e.Type)
		}
		bound[i] = shiftColumns(expr.Cast(e, want), -at)
	}
	one := expr.Literal(types.IntValue(1))
	args := []*expr.Expr{nil, nil, one}
	if unnest {
		args[0], args[1] = one, expr.Call("array_length", types.Int64Type, bound[0], one)
	} else {
		copy(args, bound)
	}
	ds := d.Schema()
	wide := append(append(types.Schema{}, ds...), types.Field{Name: "$series", Type: types.Int64Type},
		types.Field{Name: "$hi", Type: types.Int64Type}, types.Field{Name: "$step", Type: types.Int64Type})
	var p Plan = &Project{Input: d, Exprs: append(columnsOf(ds), args...), Out: wide}
	p = &Unnest{Input: p, Col: k, Func: "generate_series", Hi: k + 1, Step: k + 2, Outer: true, Out: wide}
	cols, out := columnsOf(wide[:k+1]), wide[:k+1]
	if unnest {
		// The element at each position (in order: a vector's subscripts
		// start at 0, exec/expr/pgjdbc.go).
		elem := expr.Call("$vector_elem", types.StringType, shiftColumns(bound[0], 0), cols[k])
		cols, out = append(cols, elem), append(append(types.Schema{}, out...), types.Field{Name: "$element", Type: types.StringType})
	}
	p = &Project{Input: p, Exprs: cols, Out: out}
	// The NULL row of an empty series keeps its D value through the outer
	// join, unmatched: it is no row of the subquery's FROM.
	b.lateralCond = expr.Call("is_not_null", types.BoolType, expr.Column(at+k, types.Int64Type, "$series"))
	col := at + k
	if unnest {
		col++
	}
	for i := range ext.cols {
		if ext.cols[i].idx == l.at && !ext.cols[i].outer {
			ext.cols[i].idx = col
			ext.cols[i].typ = out[col-at].Type
		}
	}
	return p, nil
}

// shiftColumns returns e with every column reference moved by delta.
func shiftColumns(e *expr.Expr, delta int) *expr.Expr {
	if e == nil {
		return nil
	}
	c := *e
	if c.Kind == expr.KindColumn {
		c.Col += delta
	}
	if len(e.Args) > 0 {
		c.Args = make([]*expr.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = shiftColumns(a, delta)
		}
	}
	return &c
}

// arrayElementTyped returns e, an element of an array held as text
// (array_get, the dialect layer's x[i]), cast to the type of other, what it
// is compared with: the element of PostgreSQL's typed array would have that
// type (attnum = prattrs[s], an int2 of an int2vector).
func arrayElementTyped(e, other *expr.Expr) *expr.Expr {
	if e.Kind != expr.KindCall || e.Func != "array_get" || other.Type.ID == types.String || other.Type.ID == types.Null {
		return e
	}
	return expr.Cast(e, other.Type)
}

// nullUnmatchedSeries makes the columns of the lateral item (from at on,
// on the domain's side of the outer join) NULL in the rows the join did not
// match, as a column of the subquery's FROM is (marker is NULL there): an
// aggregate of the subquery must not see the values of rows its WHERE
// rejected.
func nullUnmatchedSeries(p Plan, marker *expr.Expr, at int) Plan {
	out := p.Schema()
	cols := columnsOf(out)
	for i := at; i < len(out); i++ {
		cols[i] = expr.Call("case", out[i].Type, expr.Call("is_true", types.BoolType, marker), cols[i],
			expr.Literal(types.NullValue(out[i].Type)))
	}
	return &Project{Input: p, Exprs: cols, Out: out}
}
