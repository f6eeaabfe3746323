package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
)

// LATERAL derived tables (FROM t, LATERAL (SELECT ... WHERE x = t.a ORDER BY
// y LIMIT 3) s; JOIN LATERAL ... ON; LEFT JOIN LATERAL ... ON), decorrelated
// as a correlated subquery is (bind_correlated.go): the derived table S is
// bound with the FROM items to its left as its enclosing scope, so its rows
// are computed once for each distinct value D of the columns of theirs it
// reads, carrying D along (its ORDER BY and LIMIT a Top-N per D value:
// topPerDomain), and the join of the left items to S is on D, NULL-safely,
// with the join's ON condition, an inner or a left join as written. S's D is
// the distinct values of those columns from the left items' plan.

// bindLateral binds ts, a LATERAL derived table of query sel (alias its
// name) to the right of the FROM item left, at FROM position off. Without
// references to left it is any derived table.
func (b *binder) bindLateral(ts *ast.TableSource, sel ast.ResultSetNode, left *fromNode, off int) (*fromNode, error) {
	node, corr, err := b.correlatedTable(sel, ts.AsName.O, left.scope, off)
	if err == nil {
		node.lateral = corr
	}
	return node, err
}

// bindOuterDerived binds the derived table sel (alias its name, at FROM
// position off) of the FROM of a correlated subquery S, which may read the
// query enclosing S as S's WHERE may: it is bound correlated on those
// columns, as a LATERAL item is; S is then correlated on them too, its join
// to D equates them with D's (outerConds), and D's distinct values of them
// are the derived table's domain (withDomain). Without such references it is
// any derived table.
func (b *binder) bindOuterDerived(sel ast.ResultSetNode, alias string, off int) (*fromNode, error) {
	node, corr, err := b.correlatedTable(sel, alias, b.corrFrom.outer, off)
	if err == nil && corr != nil {
		node.outerCorr = corr
		b.corrTables = append(b.corrTables, node)
	}
	return node, err
}

// correlatedTable binds sel, a derived table at FROM position off (alias its
// name), as a correlated subquery of the scope outer: its rows carry the
// values of the columns of outer it reads, D's, which its node has last and
// reachable by no name. corr is nil when it reads none.
func (b *binder) correlatedTable(sel ast.ResultSetNode, alias string, outer *scope, off int) (*fromNode, *correlation, error) {
	ctx := &exprCtx{scope: outer, clause: "FROM", subs: &subqueries{}}
	p, corr, err := b.bindSubquery(ctx, sel, sel, &asLateral)
	if err != nil {
		return nil, nil, err
	}
	s := p.Schema()
	sc := schemaScope(s, alias, off)
	if corr != nil {
		m := len(s) - len(corr.cols)
		for j := m; j < len(s); j++ {
			sc.cols[j].hidden, sc.cols[j].table = true, ""
		}
		sc.star = sc.star[:m]
	}
	return &fromNode{plan: p, off: off, n: len(s), scope: sc}, corr, nil
}

// outerConds are the conditions of a correlated subquery's join to its D
// (corr's columns at position at) that give each derived table of its FROM
// read by the enclosing query (b.corrTables) its D values, NULL-safely; each
// such table's domain is registered as a part of corr's.
func (b *binder) outerConds(corr *correlation, at int) ([]*expr.Expr, error) {
	var conds []*expr.Expr
	for _, t := range b.corrTables {
		tc := t.outerCorr
		m := t.n - len(tc.cols)
		sub := subDomain{domains: append(append([]*Domain{}, tc.domains...), tc.domain)}
		for j, c := range tc.cols {
			i := 0
			for corr.cols[i].idx != c.idx {
				i++
			}
			sub.cols = append(sub.cols, i)
			f := t.plan.Schema()[m+j]
			mine := nullSafeKeys([]*expr.Expr{expr.Column(t.off+m+j, f.Type, f.Name)})
			d := nullSafeKeys([]*expr.Expr{expr.Column(at+i, c.typ, c.name)})
			for k := range mine {
				eq, err := b.call(nil, "=", mine[k], d[k])
				if err != nil {
					return nil, err
				}
				conds = append(conds, eq)
			}
		}
		corr.subDomains = append(corr.subDomains, sub)
	}
	return conds, nil
}

// lateralConds are the conditions joining a LATERAL item (right, its
// correlation corr) to the items on its left: each column of D NULL-safely
// equal to the left's column it stands for.
func (b *binder) lateralConds(right *fromNode, corr *correlation) ([]*expr.Expr, error) {
	var conds []*expr.Expr
	m := right.n - len(corr.cols)
	for j, c := range corr.cols {
		f := right.plan.Schema()[m+j]
		outer := nullSafeKeys([]*expr.Expr{expr.Column(c.idx, c.typ, c.name)})
		inner := nullSafeKeys([]*expr.Expr{expr.Column(right.off+m+j, f.Type, f.Name)})
		for i := range outer {
			eq, err := b.call(nil, "=", outer[i], inner[i])
			if err != nil {
				return nil, err
			}
			conds = append(conds, eq)
		}
	}
	return conds, nil
}

// lateralDomainOf gives the LATERAL item right (its plan rp) its domain: the
// distinct values of the columns of left it reads, from left's plan lp.
func lateralDomainOf(rp, lp Plan, left, right *fromNode) Plan {
	corr := right.lateral
	corr.outerExprs = make([]*expr.Expr, len(corr.cols))
	for i, c := range corr.cols {
		corr.outerExprs[i] = expr.Column(c.idx-left.off, c.typ, c.name)
	}
	return withDomain(rp, lp, corr)
}

// hasLateral reports whether a LATERAL item is in node's tree, which must
// then be joined in its order.
func (n *fromNode) hasLateral() bool {
	if n == nil {
		return false
	}
	return n.lateral != nil || n.left.hasLateral() || n.right.hasLateral()
}
