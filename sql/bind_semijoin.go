package sql

import (
	"slices"

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
