package sql

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Set operations. UNION ALL is a Union node; the others are built from it:
//
//	a UNION b      Aggregate (GROUP BY every column) over a UNION ALL b
//	a INTERSECT b  the same over a and b each tagged with a column only its
//	a EXCEPT b     rows set, keeping the groups both tags counted (INTERSECT)
//	               or only the left's (EXCEPT), then dropping the tags
//
// so that NULLs compare equal, as they do in set operations. INTERSECT binds
// tighter than UNION and EXCEPT, which go left to right, as in PostgreSQL. The
// columns of each side are cast to their common type; the names are the first
// side's.

// bindSetOpr binds a statement of set operations with its ORDER BY and LIMIT.
func (b *binder) bindSetOpr(n *ast.SetOprStmt) (Plan, error) {
	if n.With != nil {
		if err := b.checkWith(n.With); err != nil {
			return nil, err
		}
		defer b.pushWith(n.With)()
	}
	sc := b.setCorr
	b.setCorr = nil
	p, err := b.bindSetList(n.SelectList, sc)
	if err != nil {
		return nil, err
	}
	if sc != nil && n.Limit != nil {
		return nil, Errorf(ErrUnsupported, b.identPos("limit"), "LIMIT after set operations in a correlated subquery is not supported")
	}
	return b.bindSetOrderLimit(p, n.OrderBy, n.Limit)
}

// bindSetList binds the operands of a (parenthesised) list of set
// operations; with sc, each SELECT correlated (setCorrelation).
func (b *binder) bindSetList(l *ast.SetOprSelectList, sc *setCorrelation) (Plan, error) {
	if l.With != nil {
		if err := b.checkWith(l.With); err != nil {
			return nil, err
		}
		defer b.pushWith(l.With)()
	}
	var plans []Plan
	var ops []ast.SetOprType // ops[i] joins plans[i] and plans[i+1]
	for i, sel := range l.Selects {
		var p Plan
		var op *ast.SetOprType
		var err error
		switch s := sel.(type) {
		case *ast.SelectStmt:
			if sc != nil {
				b.pendingCorr = sc.branch()
			}
			p, err = b.bindQuery(s)
			op = s.AfterSetOperator
		case *ast.SetOprSelectList:
			p, err = b.bindSetList(s, sc)
			op = s.AfterSetOperator
		default:
			return nil, b.errorf(ErrUnsupported, nil, "this operand of a set operation is not supported")
		}
		if err != nil {
			return nil, err
		}
		if i > 0 {
			if op == nil {
				return nil, b.errorf(ErrSyntax, nil, "a set operation without its operator")
			}
			ops = append(ops, *op)
		}
		plans = append(plans, p)
	}
	if sc != nil {
		if corr, ok := sc.combined(); !ok {
			return nil, &setRetry{cols: corr.cols}
		}
	}
	// INTERSECT first.
	for i := 0; i < len(ops); {
		if ops[i] != ast.Intersect && ops[i] != ast.IntersectAll {
			i++
			continue
		}
		p, err := b.setOp(ops[i], plans[i], plans[i+1])
		if err != nil {
			return nil, err
		}
		plans = append(append(plans[:i:i], p), plans[i+2:]...)
		ops = append(ops[:i:i], ops[i+1:]...)
	}
	p := plans[0]
	for i, op := range ops {
		var err error
		if p, err = b.setOp(op, p, plans[i+1]); err != nil {
			return nil, err
		}
	}
	if sc != nil && l.Limit != nil {
		return nil, Errorf(ErrUnsupported, b.identPos("limit"), "LIMIT after set operations in a correlated subquery is not supported")
	}
	return b.bindSetOrderLimit(p, l.OrderBy, l.Limit)
}

// setOp combines two operands.
func (b *binder) setOp(op ast.SetOprType, l, r Plan) (Plan, error) {
	name := map[ast.SetOprType]string{ast.Union: "UNION", ast.UnionAll: "UNION", ast.Intersect: "INTERSECT",
		ast.IntersectAll: "INTERSECT", ast.Except: "EXCEPT", ast.ExceptAll: "EXCEPT"}[op]
	ls, rs := l.Schema(), r.Schema()
	if len(ls) != len(rs) {
		return nil, b.errorf(ErrSyntax, nil, "each %s query must have the same number of columns", name)
	}
	out := make(types.Schema, len(ls))
	for i := range ls {
		lt, rt := ls[i].Type, rs[i].Type
		// A NULL select item is text only for want of another type: here
		// the other side's gives it one (SELECT 1 UNION SELECT NULL is bigint).
		if nullItem(l, i) {
			lt = types.NullType
		}
		if nullItem(r, i) {
			rt = types.NullType
		}
		t, ok := expr.Coerce(lt, rt)
		if !ok {
			return nil, b.errorf(ErrType, nil, "%s types %s and %s cannot be matched", name, ls[i].Type, rs[i].Type)
		}
		if t.ID == types.Null {
			t = types.StringType // PostgreSQL: NULL UNION NULL is text
		}
		if charLike(lt) && charLike(rt) && lt != rt {
			// PostgreSQL: varchar(5) UNION varchar(7) is varchar, char(3)
			// UNION varchar(4) bpchar: the first side's type, no length.
			t = types.Type{ID: types.String, OID: lt.OID}
		}
		out[i] = types.Field{Name: ls[i].Name, Type: t}
	}
	switch op {
	case ast.UnionAll:
		if v, ok := concatValues(l, r, out); ok {
			return v, nil
		}
		return &Union{Left: castTo(l, out, nil), Right: castTo(r, out, nil), Out: out}, nil
	case ast.Union:
		u := &Union{Left: castTo(l, out, nil), Right: castTo(r, out, nil), Out: out}
		return &Aggregate{Input: u, GroupBy: identity(len(out)), Out: out}, nil
	case ast.IntersectAll, ast.ExceptAll:
		// Each row numbered among its equals on its side (1..m, 1..n): the
		// distinct set operation over (row, number) keeps min(m, n) copies of
		// the row for INTERSECT ALL and max(m - n, 0) for EXCEPT ALL, as
		// PostgreSQL's; the numbers then go.
		n := len(out)
		numbered := append(append(types.Schema{}, out...), types.Field{Name: "$copy", Type: types.Int64Type})
		number := func(p Plan) Plan {
			return &Window{Input: castTo(p, out, nil), Partition: identity(n), Out: numbered,
				Funcs: []WindowCall{{Func: "row_number", Default: -1, Frame: WindowFrame{StartUnbounded: true, EndUnbounded: true}, Type: types.Int64Type}}}
		}
		distinct := ast.Intersect
		if op == ast.ExceptAll {
			distinct = ast.Except
		}
		p, err := b.setOp(distinct, number(l), number(r))
		if err != nil {
			return nil, err
		}
		exprs := make([]*expr.Expr, n)
		for i, f := range out {
			exprs[i] = expr.Column(i, f.Type, f.Name)
		}
		return &Project{Input: p, Exprs: exprs, Out: out}, nil
	}
	// INTERSECT and EXCEPT: count each group's rows from either side.
	one, none := expr.Literal(types.IntValue(1)), expr.Literal(types.NullValue(types.Int64Type))
	tagged := append(append(types.Schema{}, out...), types.Field{Name: "$left", Type: types.Int64Type}, types.Field{Name: "$right", Type: types.Int64Type})
	u := &Union{Left: castTo(l, out, []*expr.Expr{one, none}), Right: castTo(r, out, []*expr.Expr{none, one}), Out: tagged}
	n := len(out)
	counts := append(append(types.Schema{}, out...), types.Field{Name: "$left", Type: types.Int64Type}, types.Field{Name: "$right", Type: types.Int64Type})
	agg := &Aggregate{Input: u, GroupBy: identity(n), Out: counts,
		Aggs: []AggCall{{Func: "count", Arg: n, Type: types.Int64Type}, {Func: "count", Arg: n + 1, Type: types.Int64Type}}}
	zero := expr.Literal(types.IntValue(0))
	left := expr.Column(n, types.Int64Type, "$left")
	right := expr.Column(n+1, types.Int64Type, "$right")
	inLeft, err := b.call(nil, ">", left, zero)
	if err != nil {
		return nil, err
	}
	rightCmp := ">"
	if op == ast.Except {
		rightCmp = "="
	}
	inRight, err := b.call(nil, rightCmp, right, zero)
	if err != nil {
		return nil, err
	}
	exprs := make([]*expr.Expr, n)
	for i, f := range out {
		exprs[i] = expr.Column(i, f.Type, f.Name)
	}
	return &Project{Input: &Filter{Input: agg, Cond: and(inLeft, inRight)}, Exprs: exprs, Out: out}, nil
}

// charLike reports whether t is varchar or character, of a length or not.
func charLike(t types.Type) bool {
	return t.ID == types.String && (t.OID == types.OIDVarchar || t.OID == types.OIDBpchar)
}

// nullItem reports whether column i of p is a select list's bare NULL, which
// buildOutput types as text.
func nullItem(p Plan, i int) bool {
	proj, ok := p.(*Project)
	if !ok || i >= len(proj.Exprs) {
		return false
	}
	e := proj.Exprs[i]
	if e.Kind == expr.KindCast && len(e.Args) == 1 {
		e = e.Args[0]
	}
	return e.Kind == expr.KindLiteral && e.Type.ID == types.Null
}

// castTo projects p's columns cast to out's types, then the extra expressions;
// p itself when nothing changes.
func castTo(p Plan, out types.Schema, extra []*expr.Expr) Plan {
	in := p.Schema()
	same := len(extra) == 0
	exprs := make([]*expr.Expr, 0, len(in)+len(extra))
	fields := make(types.Schema, 0, len(in)+len(extra))
	for i, f := range in {
		e := expr.Column(i, f.Type, f.Name)
		if f.Type != out[i].Type {
			e = expr.Cast(e, out[i].Type)
			same = false
		}
		exprs = append(exprs, e)
		fields = append(fields, types.Field{Name: f.Name, Type: out[i].Type})
	}
	if same {
		return p
	}
	for i, e := range extra {
		exprs = append(exprs, e)
		fields = append(fields, types.Field{Name: fmt.Sprintf("$tag%d", i), Type: e.Type})
	}
	return &Project{Input: p, Exprs: exprs, Out: fields}
}

// bindSetOrderLimit applies the ORDER BY and LIMIT of a set operation, which
// name its output columns (by name or position) only.
func (b *binder) bindSetOrderLimit(p Plan, ob *ast.OrderByClause, lim *ast.Limit) (Plan, error) {
	if ob != nil {
		out := p.Schema()
		items := make([]selectItem, len(out))
		for i, f := range out {
			items[i] = selectItem{name: f.Name, e: expr.Column(i, f.Type, f.Name)}
		}
		ctx := &exprCtx{scope: schemaScope(out, "", 0), clause: "ORDER BY"}
		keys, hidden, at, err := b.bindOrderBy(ctx, ob, items)
		if err != nil {
			return nil, err
		}
		if len(hidden) > 0 {
			return nil, b.errorf(ErrUnsupported, at, "invalid UNION/INTERSECT/EXCEPT ORDER BY clause: only result column names or positions can be used")
		}
		p = &Sort{Input: p, Keys: keys}
	}
	if lim != nil {
		l, err := b.bindLimit(lim)
		if err != nil {
			return nil, err
		}
		l.Input = p
		p = l
	}
	return p, nil
}

// concatValues returns the UNION ALL of two lists of constant rows (a
// VALUES list, which the dialect layer writes as SELECT ... UNION ALL
// SELECT ...) as one list, each value cast to out's type: its rows then come
// in the order written, as PostgreSQL returns a VALUES list's (psql's
// \gdesc lists a statement's columns so), where a Union's inputs run side
// by side. ok is false unless both sides are such lists.
func concatValues(l, r Plan, out types.Schema) (*Values, bool) {
	lrows, lok := constantRows(l)
	rrows, rok := constantRows(r)
	if !lok || !rok {
		return nil, false
	}
	v := &Values{Out: out}
	for _, row := range append(lrows, rrows...) {
		cast := make([]*expr.Expr, len(row))
		for i, e := range row {
			cast[i] = expr.Cast(e, out[i].Type)
		}
		v.Rows = append(v.Rows, cast)
	}
	return v, true
}

// constantRows returns the rows of a plan that is a list of constant rows:
// a Values, or a SELECT of constants without FROM (a Project of constant
// expressions over a Values of one empty row).
func constantRows(p Plan) ([][]*expr.Expr, bool) {
	switch p := p.(type) {
	case *Values:
		return p.Rows, true
	case *Project:
		in, ok := p.Input.(*Values)
		if !ok || len(in.Rows) != 1 || len(in.Rows[0]) != 0 {
			return nil, false
		}
		for _, e := range p.Exprs {
			if !constant(e) {
				return nil, false
			}
		}
		return [][]*expr.Expr{p.Exprs}, true
	}
	return nil, false
}
