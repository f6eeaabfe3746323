package sql

import (
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Semi joins pushed down to a FROM item. A top-level conjunct of WHERE
// `x IN (subquery)` whose subquery reads nothing of the enclosing query is,
// as bound, a left join of the whole FROM to the subquery's distinct values,
// marked, and a filter on the mark (bindInSubquery). When x reads the columns
// of one table of a FROM of inner joins only, the same rows come from joining
// that table alone to the distinct values (each row of the table finds its
// value at most once: an inner join is the semi join) before the FROM's
// joins, and those joins then see only its matching rows: TPC-H q18 joins
// the 57 orders of big quantities to lineitem, not 1.5 million orders to it
// and then 6 million rows to the subquery.
//
// The subquery's columns (its value y and the mark) stay where WHERE reads
// them: every row left has x = y and the mark true, so they are computed so
// (applySubqueries), and the conjunct, true for every row, is dropped.

// pushSemiJoins moves the qualifying subquery joins of subs into the leaves
// of root, and returns where without their conjuncts.
func (b *binder) pushSemiJoins(root *fromNode, subs *subqueries, where []*expr.Expr) []*expr.Expr {
	leaves, _, ok := innerLeaves(root)
	if !ok {
		return where
	}
	at := subs.base
	for k := range subs.joins {
		j := &subs.joins[k]
		width := len(j.right.Schema())
		pos := at
		at += width
		if j.domain != nil || len(j.outerKeys) != 1 || len(j.innerKeys) != 1 || width != 2 {
			continue
		}
		mark := -1 // the conjunct coalesce(mark, false)
		for i, c := range where {
			if isMarkConjunct(c, pos+1) {
				mark = i
				break
			}
		}
		if mark < 0 {
			continue
		}
		// No other conjunct may read the subquery's columns.
		other := false
		for i, c := range where {
			if i != mark && slices.ContainsFunc(c.Columns(nil), func(col int) bool { return col == pos || col == pos+1 }) {
				other = true
			}
		}
		x := j.outerKeys[0]
		cols := x.Columns(nil)
		if other || len(cols) == 0 {
			continue
		}
		leaf := leafOf(leaves, cols)
		if leaf == nil {
			continue
		}
		local := shift(x, -leaf.off)
		leaf.plan = semiJoin(leaf.plan, j.right, local, j.innerKeys[0])
		j.semi = true
		where = slices.Delete(slices.Clone(where), mark, mark+1)
	}
	return where
}

// isMarkConjunct reports whether c is coalesce(column mark, false).
func isMarkConjunct(c *expr.Expr, mark int) bool {
	if c.Kind != expr.KindCall || c.Func != "coalesce" || len(c.Args) != 2 {
		return false
	}
	m, f := c.Args[0], c.Args[1]
	return m.Kind == expr.KindColumn && m.Col == mark &&
		f.Kind == expr.KindLiteral && !f.Value.Null && f.Value.Type == types.BoolType && !f.Value.Bool
}

// leafOf returns the leaf whose FROM positions hold every one of cols, or nil.
func leafOf(leaves []*fromNode, cols []int) *fromNode {
	for _, l := range leaves {
		if !slices.ContainsFunc(cols, func(c int) bool { return c < l.off || c >= l.off+l.n }) {
			return l
		}
	}
	return nil
}

// semiJoin keeps the rows of p whose x (an expression over p's columns) equals
// column key of right, whose values are distinct: p's columns only.
func semiJoin(p, right Plan, x *expr.Expr, key int) Plan {
	rs := right.Schema()
	j := leftJoin(p, right, []*expr.Expr{x}, []*expr.Expr{expr.Column(key, rs[key].Type, rs[key].Name)})
	j = asInner(j)
	s := p.Schema()
	exprs := make([]*expr.Expr, len(s))
	for i, f := range s {
		exprs[i] = expr.Column(i, f.Type, f.Name)
	}
	return &Project{Input: j, Exprs: exprs, Out: s}
}

// asInner turns the join leftJoin built (under the Project that drops computed
// keys, if any) into an inner join.
func asInner(p Plan) Plan {
	switch n := p.(type) {
	case *Join:
		n.Kind = InnerJoin
	case *Project:
		asInner(n.Input)
	}
	return p
}

// EXISTS and NOT EXISTS as semi and anti joins. A correlated EXISTS is, as
// bound, the subquery S computed for each distinct value of the enclosing
// columns it reads (its domain D, from a second reading of the enclosing
// query's FROM) and joined back (bind_correlated.go). When it is a conjunct of
// WHERE and S is one plain SELECT (no aggregate, GROUP BY, HAVING or LIMIT;
// its select list does not matter to EXISTS) whose WHERE equates some
// expression of the enclosing columns with one of its own, the same rows are
// those of the enclosing FROM that some row of S's FROM matches on the
// equalities, S's other WHERE conditions true of the pair: a semi join (an
// anti join for NOT EXISTS), the enclosing FROM read once. TPC-H q21 reads
// lineitem three times instead of seven.

// existsForm is a correlated EXISTS subquery's FROM, as bound for it, and the
// conjuncts of its WHERE that FROM did not take (over S's n columns, the
// marker at n and D's columns after it), kept by bindCorrelatedFromWhere for
// existsJoinOf.
type existsForm struct {
	from  Plan
	conds []*expr.Expr
	n     int
}

// existsJoin is an EXISTS conjunct as a semi or anti join of the enclosing
// input (applySubqueries): keys equal and extra true of a pair (the
// enclosing input's columns, then from's).
type existsJoin struct {
	from         Plan
	lkeys, rkeys []*expr.Expr // over the enclosing input, over from
	extra        *expr.Expr
	anti         bool
}

// existsJoinOf returns EXISTS (or, with not, NOT EXISTS) subquery n, bound
// with correlation corr, as a join of the subqueries of ctx, when it can be
// one.
func (b *binder) existsJoinOf(ctx *exprCtx, n ast.ExprNode, q ast.ResultSetNode, corr *correlation, not bool) (subqueryJoin, bool) {
	f := corr.exists
	sel, plain := q.(*ast.SelectStmt)
	if f == nil || !plain || sel.Limit != nil || !ctx.conjuncts[n] || ctx.subs == nil || ctx.subs.post || ctx.scope.corr != nil {
		return subqueryJoin{}, false
	}
	w := ctx.subs.base + ctx.subs.added // the enclosing input's width when joined
	k := len(corr.cols)
	defs := make([]*expr.Expr, f.n+1+k) // the columns of conds, over the pairs
	fs := f.from.Schema()
	for i := range f.n {
		defs[i] = expr.Column(w+i, fs[i].Type, fs[i].Name)
	}
	defs[f.n] = boolLit(true)
	for j, c := range corr.cols {
		defs[f.n+1+j] = corr.outerCol(j, c)
	}
	side := func(e *expr.Expr) (own, outer bool) {
		for _, c := range e.Columns(nil) {
			own = own || c < f.n
			outer = outer || c > f.n
			if c == f.n {
				return true, true
			}
		}
		return own, outer
	}
	j := &existsJoin{from: f.from, anti: not}
	var extra []*expr.Expr
	for _, c := range f.conds {
		if c.Kind == expr.KindCall && c.Func == "=" && len(c.Args) == 2 && c.Args[0].Type == c.Args[1].Type {
			a, o := c.Args[0], c.Args[1]
			aOwn, aOuter := side(a)
			oOwn, oOuter := side(o)
			if aOwn && !aOuter && oOuter && !oOwn {
				a, o = o, a
				aOwn, aOuter, oOwn, oOuter = oOwn, oOuter, aOwn, aOuter
			}
			if aOuter && !aOwn && oOwn && !oOuter {
				j.lkeys = append(j.lkeys, substitute(a, defs))
				j.rkeys = append(j.rkeys, o)
				continue
			}
		}
		extra = append(extra, substitute(c, defs))
	}
	if len(j.lkeys) == 0 {
		return subqueryJoin{}, false // a nested loop: the domain's join is better
	}
	j.extra = and(extra...)
	marker := &Values{Out: types.Schema{{Name: "exists", Type: types.BoolType}}}
	return subqueryJoin{right: marker, exists: j}, true
}

// joinExists is input semi- (anti-) joined as j says, then its column: TRUE.
func joinExists(input Plan, j *existsJoin, out types.Schema) Plan {
	in := input.Schema()
	w := len(in)
	lcols, lextra := keyColumns(j.lkeys, w)
	rcols, rextra := keyColumns(j.rkeys, len(j.from.Schema()))
	left, right := input, j.from
	if len(lextra) > 0 {
		left = appendColumns(input, lextra)
	}
	if len(rextra) > 0 {
		right = appendColumns(j.from, rextra)
	}
	kind := SemiJoin
	if j.anti {
		kind = AntiJoin
	}
	var extra *expr.Expr
	if j.extra != nil {
		extra = shiftFrom(j.extra, w, len(lextra))
	}
	var p Plan = &Join{Left: left, Right: right, Kind: kind, LeftKeys: lcols, RightKeys: rcols, Extra: extra, Out: left.Schema()}
	exprs := make([]*expr.Expr, 0, w+1)
	for i, f := range in {
		exprs = append(exprs, expr.Column(i, f.Type, f.Name))
	}
	exprs = append(exprs, boolLit(true))
	return &Project{Input: p, Exprs: exprs, Out: append(append(types.Schema{}, in...), out...)}
}
