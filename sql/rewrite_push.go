package sql

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// pushFilters returns a plan equivalent to p filtered by preds (conjuncts over
// p's output columns), with every filter of p and every pred moved as close to
// the sources as it may go.
func pushFilters(p Plan, preds []*expr.Expr) Plan {
	switch n := p.(type) {
	case *Filter:
		return pushFilters(n.Input, append(conjuncts(n.Cond), preds...))
	case *Project:
		down := make([]*expr.Expr, len(preds))
		for i, c := range preds {
			down[i] = substitute(c, n.Exprs)
		}
		c := *n
		c.Input = pushFilters(n.Input, down)
		return &c
	case *Sort:
		c := *n
		c.Input = pushFilters(n.Input, preds)
		return &c
	case *Unnest:
		var down, stay []*expr.Expr
		for _, c := range preds {
			if reads(c, n.Col) {
				stay = append(stay, c)
			} else {
				down = append(down, c)
			}
		}
		c := *n
		c.Input = pushFilters(n.Input, down)
		return filterOver(&c, stay)
	case *Aggregate:
		// A condition on group columns only keeps or drops whole groups, so it can
		// filter the input instead. Without GROUP BY there is one group that
		// exists even over no rows: nothing moves.
		var down, stay []*expr.Expr
		for _, c := range preds {
			cols := c.Columns(nil)
			ok := len(n.GroupBy) > 0 && len(cols) > 0
			for _, col := range cols {
				ok = ok && col < len(n.GroupBy)
			}
			if ok {
				down = append(down, remapCols(c, n.GroupBy))
			} else {
				stay = append(stay, c)
			}
		}
		c := *n
		c.Input = pushFilters(n.Input, down)
		return filterOver(&c, stay)
	case *Join:
		return pushJoin(n, preds)
	case *Window:
		// A filter before would change the partitions: nothing moves down.
		c := *n
		c.Input = pushFilters(n.Input, nil)
		return filterOver(&c, preds)
	case *MaxOneRow:
		// Filtering first could hide a second row: nothing moves down.
		return filterOver(&MaxOneRow{Input: pushFilters(n.Input, nil)}, preds)
	case *Union:
		// Each side's rows are filtered alike: its columns are the union's.
		c := *n
		c.Left, c.Right = pushFilters(n.Left, preds), pushFilters(n.Right, preds)
		return &c
	case *Limit:
		c := *n
		c.Input = pushFilters(n.Input, nil)
		return filterOver(&c, preds)
	}
	return filterOver(p, preds)
}

// pushJoin places conditions above a join: one side's conditions filter that side
// (for a left join, only the left side: filtering the right would turn
// NULL-extended rows into missing ones); an inner join takes conditions on both
// sides into Extra. Single-sided conjuncts of Extra also move down: either side
// of an inner join, the right side of a left join (a right row that fails never
// matches; a left row that fails must still be NULL-extended, so those stay).
func pushJoin(n *Join, preds []*expr.Expr) Plan {
	nl := len(n.Left.Schema())
	var left, right, extra, stay []*expr.Expr
	side := func(c *expr.Expr) int { // -1 left, 1 right, 0 both or none
		cols := c.Columns(nil)
		if len(cols) == 0 {
			return 0
		}
		l, r := false, false
		for _, col := range cols {
			l = l || col < nl
			r = r || col >= nl
		}
		switch {
		case l && !r:
			return -1
		case r && !l:
			return 1
		}
		return 0
	}
	for _, c := range preds {
		switch s := side(c); {
		case s < 0 && n.Kind != FullJoin:
			left = append(left, c)
		case s > 0 && n.Kind == InnerJoin:
			right = append(right, shift(c, -nl))
		case n.Kind == InnerJoin && len(c.Columns(nil)) > 0:
			extra = append(extra, c)
		default:
			stay = append(stay, c)
		}
	}
	for _, c := range conjuncts(n.Extra) {
		switch s := side(c); {
		case s < 0 && (n.Kind == InnerJoin || n.Kind == SemiJoin):
			left = append(left, c)
		case s > 0 && n.Kind != FullJoin:
			right = append(right, shift(c, -nl))
		default:
			extra = append(extra, c)
		}
	}
	// A condition on both sides that is an OR implies, on each side, the OR
	// of what each of its terms asks of that side alone, when every term asks
	// something: TPC-H q19's three (brand, container, size, quantity) terms
	// keep only the parts of the three brands and the lineitems of the three
	// quantity ranges before the join, q7's two (nation, nation) terms only
	// the two nations on each side. The OR itself stays.
	for _, c := range extra {
		if n.Kind == InnerJoin || n.Kind == SemiJoin {
			if d := impliedBy(c, func(k *expr.Expr) bool { return side(k) < 0 }); d != nil {
				left = append(left, d)
			}
		}
		if n.Kind != FullJoin {
			if d := impliedBy(c, func(k *expr.Expr) bool { return side(k) > 0 }); d != nil {
				right = append(right, shift(d, -nl))
			}
		}
	}
	c := *n
	c.Left = pushFilters(n.Left, left)
	c.Right = pushFilters(n.Right, right)
	c.Extra = and(extra...)
	return filterOver(&c, stay)
}

// impliedBy returns what the disjunction c implies of the columns that only
// accepts: the OR, over c's terms, of the AND of each term's conjuncts that
// only accepts; nil when c is no OR or one of its terms has no such conjunct.
func impliedBy(c *expr.Expr, only func(*expr.Expr) bool) *expr.Expr {
	terms := disjuncts(c)
	if len(terms) < 2 {
		return nil
	}
	implied := make([]*expr.Expr, 0, len(terms))
	for _, t := range terms {
		var mine []*expr.Expr
		for _, k := range conjuncts(t) {
			if only(k) {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			return nil
		}
		implied = append(implied, and(mine...))
	}
	return expr.Call("or", types.BoolType, implied...)
}

// disjuncts returns the terms of e's ORs, however they nest.
func disjuncts(e *expr.Expr) []*expr.Expr {
	if e.Kind != expr.KindCall || e.Func != "or" {
		return []*expr.Expr{e}
	}
	var out []*expr.Expr
	for _, a := range e.Args {
		out = append(out, disjuncts(a)...)
	}
	return out
}

// reads reports whether e reads column col.
func reads(e *expr.Expr, col int) bool {
	for _, c := range e.Columns(nil) {
		if c == col {
			return true
		}
	}
	return false
}

// filterOver puts a Filter of preds over p, or returns p when there are none.
func filterOver(p Plan, preds []*expr.Expr) Plan {
	if len(preds) == 0 {
		return p
	}
	cond := and(preds...)
	if cond.Type.ID != types.Bool {
		cond = expr.Cast(cond, types.BoolType)
	}
	return &Filter{Input: p, Cond: cond}
}
