package sql

// The domain of a correlated subquery: the distinct outer keys it is
// evaluated for, where they come from, and how they join back (the
// decorrelation in bind_correlated.go).

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// domainItems are the select items a correlated subquery's result carries
// along: D's columns.
func domainItems(corr *correlation) []selectItem {
	items := make([]selectItem, len(corr.cols))
	for j, c := range corr.cols {
		items[j] = selectItem{name: "$" + c.name, e: expr.Column(corr.at+j, c.typ, c.name)}
	}
	return items
}

// domainJoin makes the join of a correlated subquery's result right (whose
// last len(corr.cols) columns are D's) to the enclosing input, on D.
func domainJoin(right Plan, corr *correlation) subqueryJoin {
	return subqueryJoin{right: right, domain: corr}
}

// domainKeys are the keys of a domain join: the enclosing columns, and the
// last columns of right.
func domainKeys(right Plan, corr *correlation) (outer, inner []*expr.Expr) {
	rs := right.Schema()
	k := len(corr.cols)
	for i, c := range corr.cols {
		outer = append(outer, corr.outerCol(i, c))
		f := rs[len(rs)-k+i]
		inner = append(inner, expr.Column(len(rs)-k+i, f.Type, f.Name))
	}
	return outer, inner
}

// outerCol is the enclosing column c, the i-th of corr.cols, over the input
// the subquery is joined to.
func (corr *correlation) outerCol(i int, c column) *expr.Expr {
	if corr.outerExprs != nil {
		return corr.outerExprs[i]
	}
	return expr.Column(c.idx, c.typ, c.name)
}

// postDomains maps the enclosing columns of the correlated subqueries subs
// joins after an aggregation (groups, its output out) to that output: each
// must be a group key, as in PostgreSQL.
func (b *binder) postDomains(subs *subqueries, groups []*expr.Expr, out types.Schema) error {
	for _, j := range subs.joins {
		corr := j.domain
		if corr == nil {
			continue
		}
		corr.outerExprs = make([]*expr.Expr, len(corr.cols))
		for i, c := range corr.cols {
			e, err := b.toAggSpace(expr.Column(c.idx, c.typ, c.name), groups, out)
			if err != nil {
				return Errorf(ErrGrouping, b.refPos(c.qualified(), c.name), "subquery uses ungrouped column \"%s\" from outer query", c.qualified())
			}
			corr.outerExprs[i] = e
		}
	}
	return nil
}

// refPos is the position of the first reference bound to the column called
// qualified, else of the first identifier name.
func (b *binder) refPos(qualified, name string) int {
	pos := 0
	for _, r := range b.refs {
		if r.name == qualified && r.pos > 0 && (pos == 0 || r.pos < pos) {
			pos = r.pos
		}
	}
	if pos == 0 {
		pos = b.identPos(name)
	}
	return pos
}

// withDomain gives a correlated subquery's plan its domain: the distinct
// values of the enclosing columns it reads, from the enclosing input.
func withDomain(right, input Plan, corr *correlation) Plan {
	exprs := make([]*expr.Expr, len(corr.cols))
	for i, c := range corr.cols {
		exprs[i] = corr.outerCol(i, c)
	}
	domains := corr.domains
	if corr.domain != nil {
		domains = append(domains, corr.domain)
	}
	if corr.innerJoin && corr.est != nil && corr.outerExprs == nil {
		input, exprs = domainSource(input, exprs, corr.est)
	}
	vals := &Project{Input: input, Exprs: exprs, Out: domains[0].Out}
	d := &Aggregate{Input: vals, GroupBy: identity(len(exprs)), Out: domains[0].Out}
	for _, dom := range domains {
		right = replacePlan(right, dom, d)
	}
	for _, sub := range corr.subDomains {
		exprs := make([]*expr.Expr, len(sub.cols))
		out := make(types.Schema, len(sub.cols))
		for i, c := range sub.cols {
			f := domains[0].Out[c]
			exprs[i], out[i] = expr.Column(c, f.Type, f.Name), f
		}
		sd := &Aggregate{Input: &Project{Input: d, Exprs: exprs, Out: out}, GroupBy: identity(len(exprs)), Out: out}
		for _, dom := range sub.domains {
			if dom != nil {
				right = replacePlan(right, dom, sd)
			}
		}
	}
	return right
}

// domainSource narrows the input D is taken from, for a subquery joined by
// inner joins (correlation.innerJoin), whose D may be a superset of the
// enclosing keys: a D value no enclosing row has only gives the subquery a
// row no enclosing row joins. Under the input's Filters and inner joins it
// takes the side that has all of D's columns cols (expressions over input),
// with the filter conjuncts that read only that side, where re
// estimates that side at no more rows than the join: the other side is then
// no reduction of D but a cost, as TPC-H q17's lineitem, whose join to the
// parts of one brand and container would be read a second time for D. (In
// q20 partsupp's join to the green parts is smaller than partsupp: D stays
// the join's.) It returns the narrowed input and cols over it.
func domainSource(input Plan, cols []*expr.Expr, re RowEstimator) (Plan, []*expr.Expr) {
	var conds []*expr.Expr
	within := func(lo, hi int, es ...*expr.Expr) bool {
		for _, e := range es {
			for _, c := range e.Columns(nil) {
				if c < lo || c >= hi {
					return false
				}
			}
		}
		return true
	}
	cols = slices.Clone(cols)
	p := input
descend:
	for {
		switch n := p.(type) {
		case *Filter:
			conds = append(conds, conjuncts(n.Cond)...)
			p = n.Input
		case *Project: // join ordering's, restoring the FROM's column order
			for i, c := range conds {
				conds[i] = substitute(c, n.Exprs)
			}
			for i, c := range cols {
				cols[i] = substitute(c, n.Exprs)
			}
			p = n.Input
		case *Join:
			if n.Kind != InnerJoin {
				break descend
			}
			nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
			lo, hi, side := 0, nl, n.Left
			if !within(0, nl, cols...) {
				lo, hi, side = nl, nl+nr, n.Right
			}
			if !within(lo, hi, cols...) {
				break descend
			}
			var kept []*expr.Expr
			for _, c := range conds {
				if within(lo, hi, c) {
					kept = append(kept, shift(c, -lo))
				}
			}
			whole, okW := planRows(filtered(p, conds), re, false)
			part, okP := planRows(filtered(side, kept), re, false)
			if !okW || !okP || part > whole {
				break descend
			}
			for i, c := range cols {
				cols[i] = shift(c, -lo)
			}
			conds, p = kept, side
		default:
			break descend
		}
	}
	return filtered(p, conds), cols
}

// filtered is p under a Filter of conds, if any.
func filtered(p Plan, conds []*expr.Expr) Plan {
	if len(conds) == 0 {
		return p
	}
	return &Filter{Input: p, Cond: and(conds...)}
}

// nullSafeKeys turns join keys into ones under which NULL equals NULL:
// coalesce(k, zero) and k IS NULL for each (a hash join never matches a NULL
// key).
func nullSafeKeys(keys []*expr.Expr) []*expr.Expr {
	var out []*expr.Expr
	for _, k := range keys {
		z := zeroOf(k.Type)
		out = append(out, expr.Call("coalesce", k.Type, k, z), expr.Call("is_null", types.BoolType, k))
	}
	return out
}

// zeroOf is a non-NULL value of t.
func zeroOf(t types.Type) *expr.Expr {
	switch t.ID {
	case types.String:
		return expr.Literal(types.StringValue(""))
	case types.Bool:
		return expr.Literal(types.BoolValue(false))
	case types.Float64:
		return expr.Literal(types.Value{Type: t})
	case types.Decimal:
		return expr.Literal(types.DecimalValue(t, decimal128.Num{}))
	}
	return expr.Literal(types.Value{Type: t}) // bigint and timestamp: 0
}
