package sql

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Join order. A FROM of inner joins only (commas, [INNER] JOIN, CROSS JOIN)
// is joined in an order where each next table shares an equality with those
// joined before it, if one does, whatever the order of the FROM: FROM part,
// supplier, lineitem WHERE p = l.p AND s = l.s joins part to lineitem, then
// supplier, instead of crossing part with supplier. The tables are taken
// greedily in FROM order, each time the first connected one; without one, the
// next in FROM order (a cross join). ON conditions of inner joins count as
// WHERE conditions. The result has the FROM's columns in the FROM's order.

// innerLeaves returns the tables of node if it joins them by inner joins only,
// and the conditions of its joins.
func innerLeaves(node *fromNode) (leaves []*fromNode, conds []*expr.Expr, ok bool) {
	if node.plan != nil {
		return []*fromNode{node}, nil, true
	}
	if node.kind != fromInner {
		return nil, nil, false
	}
	l, lc, ok := innerLeaves(node.left)
	if !ok {
		return nil, nil, false
	}
	r, rc, ok := innerLeaves(node.right)
	if !ok {
		return nil, nil, false
	}
	conds = append(append(append(conds, lc...), rc...), node.conds...)
	return append(l, r...), conds, true
}

// joinOrder returns the order in which to join leaves under conds, and
// whether it differs from theirs.
func joinOrder(leaves []*fromNode, conds []*expr.Expr) ([]int, bool) {
	owner := map[int]int{} // FROM position -> leaf
	for i, l := range leaves {
		for p := l.off; p < l.off+l.n; p++ {
			owner[p] = i
		}
	}
	// edges[i][j]: an equality joins leaves i and j.
	edges := make([]map[int]bool, len(leaves))
	for i := range edges {
		edges[i] = map[int]bool{}
	}
	for _, c := range conds {
		if c.Kind != expr.KindCall || c.Func != "=" || len(c.Args) != 2 {
			continue
		}
		a, oka := onlyLeaf(c.Args[0], owner)
		b, okb := onlyLeaf(c.Args[1], owner)
		if oka && okb && a != b {
			edges[a][b], edges[b][a] = true, true
		}
	}
	used := make([]bool, len(leaves))
	order := []int{0}
	used[0] = true
	changed := false
	for len(order) < len(leaves) {
		next := -1
		for i := range leaves {
			if used[i] {
				continue
			}
			for _, j := range order {
				if edges[i][j] {
					next = i
					break
				}
			}
			if next >= 0 {
				break
			}
		}
		if next < 0 {
			for i := range leaves {
				if !used[i] {
					next = i
					break
				}
			}
		}
		changed = changed || next != len(order)
		used[next] = true
		order = append(order, next)
	}
	return order, changed
}

// onlyLeaf returns the one leaf all of e's columns belong to.
func onlyLeaf(e *expr.Expr, owner map[int]int) (int, bool) {
	cols := e.Columns(nil)
	if len(cols) == 0 {
		return 0, false
	}
	leaf, ok := owner[cols[0]]
	if !ok {
		return 0, false
	}
	for _, c := range cols[1:] {
		if l, ok := owner[c]; !ok || l != leaf {
			return 0, false
		}
	}
	return leaf, true
}

// buildReordered builds the FROM (root, width root.n) joining its tables in
// a better order (joinOrder), and applies the WHERE conditions over its
// columns, taking them out of where. It returns nil when the FROM is not
// inner joins only, or its order is already the one joinOrder picks.
func (b *binder) buildReordered(root *fromNode, where *[]*expr.Expr) (Plan, error) {
	leaves, conds, ok := innerLeaves(root)
	if !ok || len(leaves) < 3 {
		return nil, nil
	}
	// The WHERE conditions over the FROM's columns join with the ON ones;
	// the others (reading subqueries' columns) wait.
	var rest []*expr.Expr
	for _, w := range *where {
		inFrom := true
		for _, c := range w.Columns(nil) {
			inFrom = inFrom && c < root.n
		}
		if inFrom {
			conds = append(conds, w)
		} else {
			rest = append(rest, w)
		}
	}
	order, changed := joinOrder(leaves, conds)
	if !changed {
		return nil, nil
	}
	// Renumber the FROM positions in the new order and build the joins as
	// a left-deep tree over them.
	newPos := map[int]int{}
	var tree *fromNode
	off := 0
	for _, i := range order {
		l := leaves[i]
		for p := 0; p < l.n; p++ {
			newPos[l.off+p] = off + p
		}
		leaf := &fromNode{plan: l.plan, off: off, n: l.n}
		if tree == nil {
			tree = leaf
		} else {
			tree = &fromNode{left: tree, right: leaf, off: 0, n: tree.n + l.n}
		}
		off += l.n
	}
	remapped := make([]*expr.Expr, len(conds))
	for i, c := range conds {
		remapped[i] = c.Remap(newPos)
	}
	p, err := b.buildFrom(tree, &remapped, false)
	if err != nil {
		return nil, err
	}
	if len(remapped) > 0 {
		p = &Filter{Input: p, Cond: and(remapped...)}
	}
	// Back to the FROM's order.
	s := p.Schema()
	exprs := make([]*expr.Expr, root.n)
	out := make(types.Schema, root.n)
	for i := range exprs {
		j := newPos[i]
		exprs[i], out[i] = expr.Column(j, s[j].Type, s[j].Name), s[j]
	}
	*where = rest
	return &Project{Input: p, Exprs: exprs, Out: out}, nil
}
