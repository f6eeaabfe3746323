package sql

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Join order. A FROM of inner joins only (commas, [INNER] JOIN, CROSS JOIN)
// is joined as a left-deep tree in an order where each next table shares an
// equality with those joined before it, if one does, whatever the order of the
// FROM: FROM part, supplier, lineitem WHERE p = l.p AND s = l.s joins part to
// lineitem, then supplier, instead of crossing part with supplier. ON
// conditions of inner joins count as WHERE conditions. The result has the
// FROM's columns in the FROM's order.
//
// Each join's right input is the hash join's build side, held in memory, and
// its left input streams through. So when the catalog estimates every table's
// rows (its connectors': a file's size over its lines' length, a stream's
// infinity), the order starts with the table of most rows after its own WHERE
// conditions (each keeps a guessed fraction: a tenth for an equality with a
// constant, a third for another condition) and then takes, each time, the
// connected table that makes the smallest join, the one of fewer rows on a
// tie: the biggest table (a stream, which must not be built) probes, the
// others are built. A join's size is the product of its inputs' rows and of
// 1/max(d(a), d(b)) for each equality a = b between them, where d is a
// column's distinct values (the catalog's estimate, else its table's rows),
// each capped by the other side's rows (its values are taken to be among the
// other side's, as a foreign key's are among its key's). So a join on a
// column of few values (lineitem to customer on a nation key) waits until a
// key (the order's customer) has narrowed it. Without estimates the tables
// are taken greedily in FROM order, each time the first connected one. Either
// way, with no connected table left, the next is crossed.

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
// whether it differs from theirs; est, if not nil, is each leaf's estimated
// rows after its own conditions and base its rows before them, and ndv the distinct values of a FROM
// position (nil, or 0 for a position: unknown).
func joinOrder(leaves []*fromNode, conds []*expr.Expr, est, base []float64, ndv func(pos int) float64) ([]int, bool) {
	owner := leafOwners(leaves)
	// edges[i][j]: the equalities between leaves i and j, as FROM positions
	// (0 for a side that is not a plain column).
	type eq struct{ a, b int }
	edges := make([]map[int][]eq, len(leaves))
	for i := range edges {
		edges[i] = map[int][]eq{}
	}
	pos := func(e *expr.Expr) int {
		if e.Kind == expr.KindColumn {
			return e.Col
		}
		return -1
	}
	for _, c := range conds {
		if c.Kind != expr.KindCall || c.Func != "=" || len(c.Args) != 2 {
			continue
		}
		a, oka := onlyLeaf(c.Args[0], owner)
		b, okb := onlyLeaf(c.Args[1], owner)
		if oka && okb && a != b {
			pa, pb := pos(c.Args[0]), pos(c.Args[1])
			edges[a][b] = append(edges[a][b], eq{pa, pb})
			edges[b][a] = append(edges[b][a], eq{pb, pa})
		}
	}
	// distinct is the distinct values of position p of leaf i: the estimate,
	// at most the leaf's rows; its rows without one.
	distinct := func(p, i int) float64 {
		d := est[i]
		if ndv != nil && p >= 0 {
			if n := ndv(p); n > 0 {
				d = min(d, n)
			}
		}
		return max(d, 1)
	}
	first := 0
	for i := range leaves {
		if est != nil && est[i] > est[first] {
			first = i
		}
	}
	used := make([]bool, len(leaves))
	order := []int{first}
	used[first] = true
	size := 0.0 // the estimated rows of the leaves joined so far
	if est != nil {
		size = est[first]
	}
	for len(order) < len(leaves) {
		next, connected, nextSize := -1, false, 0.0
		for i := range leaves {
			if used[i] {
				continue
			}
			linked := false
			joined := size
			if est != nil {
				joined *= est[i]
			}
			for _, j := range order {
				// di and dj: the distinct values of i's and j's sides of
				// their equalities, taken together (as a composite key's
				// columns, partsupp's), so at most their rows; and, as a
				// foreign key's values are among its key's, at most the
				// other side's rows before its own conditions.
				di, dj := 1.0, 1.0
				for _, e := range edges[i][j] {
					linked = true
					if est != nil {
						// e.a is i's side, e.b the joined leaf j's.
						di *= distinct(e.a, i)
						dj *= distinct(e.b, j)
					}
				}
				if est != nil && len(edges[i][j]) > 0 {
					di = min(di, est[i], base[j])
					dj = min(dj, est[j], base[i])
					joined /= max(di, dj, 1)
				}
			}
			better := est != nil && next >= 0 && (joined < nextSize || joined == nextSize && est[i] < est[next])
			switch {
			case next < 0, linked && !connected, linked == connected && better:
				next, connected, nextSize = i, linked, joined
			}
		}
		used[next] = true
		order = append(order, next)
		size = max(nextSize, 1)
	}
	changed := false
	for k, i := range order {
		changed = changed || i != k
	}
	return order, changed
}

// leafOwners maps each FROM position to the leaf that outputs it.
func leafOwners(leaves []*fromNode) map[int]int {
	owner := map[int]int{}
	for i, l := range leaves {
		for p := l.off; p < l.off+l.n; p++ {
			owner[p] = i
		}
	}
	return owner
}

// leafEstimates returns each leaf's estimated rows after the conditions that
// read only its columns, and before them, or nils when the catalog cannot
// estimate one of them.
func (b *binder) leafEstimates(leaves []*fromNode, conds []*expr.Expr) (est, base []float64) {
	re, ok := b.cat.(RowEstimator)
	if !ok {
		return nil, nil
	}
	est = make([]float64, len(leaves))
	for i, l := range leaves {
		n, ok := planRows(l.plan, re, false)
		if !ok {
			return nil, nil
		}
		est[i] = n
	}
	base = append([]float64(nil), est...)
	owner := leafOwners(leaves)
	for _, c := range conds {
		if leaf, ok := onlyLeaf(c, owner); ok {
			est[leaf] *= selectivity(c)
		}
	}
	return est, base
}

// positionDistinct returns the estimated distinct values of a FROM position
// (0: unknown), for the positions of leaves that scan a table; nil when the
// catalog estimates none.
func (b *binder) positionDistinct(leaves []*fromNode) func(int) float64 {
	de, ok := b.cat.(DistinctEstimator)
	if !ok {
		return nil
	}
	cache := map[int]float64{}
	return func(p int) float64 {
		if d, ok := cache[p]; ok {
			return d
		}
		d := 0.0
		for _, l := range leaves {
			scan, ok := l.plan.(*Scan)
			if !ok || p < l.off || p >= l.off+l.n {
				continue
			}
			col := p - l.off
			if scan.Columns != nil {
				col = scan.Columns[col]
			}
			if n, ok := de.EstimateDistinct(scan.Table, col); ok {
				d = n
			}
		}
		cache[p] = d
		return d
	}
}

// selectivity is the fraction of rows a condition is guessed to keep.
func selectivity(c *expr.Expr) float64 {
	if c.Kind == expr.KindCall && c.Func == "=" && len(c.Args) == 2 &&
		(c.Args[0].Kind == expr.KindLiteral || c.Args[1].Kind == expr.KindLiteral) {
		return 0.1
	}
	return 1.0 / 3
}

// EstimateRows estimates the rows p yields by the catalog's table estimates
// and guessed selectivities, as join ordering does; with upper, a grouped
// aggregate counts as many rows as its input: an estimate that decides
// whether a side is small enough to copy to every task, or to build a hash
// table of, must not guess low where it knows nothing (EXISTS over a big
// table is a grouped aggregate of about as many keys as rows), and one that
// decides a side is big not high. ok is false when a table's rows cannot be
// estimated.
func EstimateRows(p Plan, re RowEstimator, upper bool) (rows float64, ok bool) {
	return planRows(p, re, upper)
}

// planRows estimates the rows a FROM item's plan yields; upper keeps a
// grouped aggregate at its input's rows instead of guessing a tenth.
func planRows(p Plan, re RowEstimator, upper bool) (float64, bool) {
	switch p := p.(type) {
	case *Scan:
		return re.EstimateRows(p.Table)
	case *Values:
		return float64(len(p.Rows)), true
	case *Filter:
		n, ok := planRows(p.Input, re, upper)
		return n * selectivity(p.Cond), ok
	case *Aggregate:
		n, ok := planRows(p.Input, re, upper)
		switch {
		case len(p.GroupBy) == 0:
			return 1, ok
		case upper:
			return n, ok
		}
		return n / 10, ok
	case *Limit:
		n, ok := planRows(p.Input, re, upper)
		if p.Count >= 0 && float64(p.Count) < n {
			n = float64(p.Count)
		}
		return n, ok
	case *Join:
		l, okL := planRows(p.Left, re, upper)
		r, okR := planRows(p.Right, re, upper)
		if !okL || !okR {
			return 0, false
		}
		if p.Kind.Filters() {
			if upper {
				return l, true
			}
			return l / 2, true
		}
		// As big as its bigger input (a join along a foreign key), unless
		// its keys' distinct values are known: then |L| |R| / distinct.
		n := max(l, r)
		if d := keyDistinct(p, re); d > 0 {
			n = l * r / d
		}
		switch p.Kind {
		case LeftJoin:
			n = max(n, l)
		case FullJoin:
			n = max(n, l, r)
		}
		return n, true
	}
	// Projections, sorts, joins (as big as their biggest input, which holds
	// for joins along foreign keys), unions (their sum).
	var n float64
	inputs := p.Inputs()
	if len(inputs) == 0 {
		return 0, false
	}
	_, union := p.(*Union)
	for _, in := range inputs {
		m, ok := planRows(in, re, upper)
		if !ok {
			return 0, false
		}
		if union {
			n += m
		} else {
			n = max(n, m)
		}
	}
	return n, true
}

// keyDistinct estimates the distinct values of join p's keys: the most of
// any one key's, on either side (0: unknown).
func keyDistinct(p *Join, re RowEstimator) float64 {
	d := 0.0
	for i, l := range p.LeftKeys {
		d = max(d, columnDistinct(p.Left, l, re), columnDistinct(p.Right, p.RightKeys[i], re))
	}
	return d
}

// columnDistinct estimates the distinct values of column col of p's output
// by the table column it is (0: unknown, or not a table's column).
func columnDistinct(p Plan, col int, re RowEstimator) float64 {
	switch p := p.(type) {
	case *Scan:
		de, ok := re.(DistinctEstimator)
		if !ok {
			return 0
		}
		c := col
		if p.Columns != nil {
			c = p.Columns[col]
		}
		if n, ok := de.EstimateDistinct(p.Table, c); ok {
			return n
		}
	case *Filter, *Sort, *Limit: // the input's columns, some of its rows
		return columnDistinct(p.Inputs()[0], col, re)
	case *Project:
		e := p.Exprs[col]
		if e.Kind == expr.KindCall && e.Func == "coalesce" && len(e.Args) > 0 { // a NULL-safe key
			e = e.Args[0]
		}
		if e.Kind == expr.KindColumn {
			return columnDistinct(p.Input, e.Col, re)
		}
	case *Join:
		if n := len(p.Left.Schema()); col >= n {
			return columnDistinct(p.Right, col-n, re)
		}
		return columnDistinct(p.Left, col, re)
	case *Aggregate:
		if col < len(p.GroupBy) {
			return columnDistinct(p.Input, p.GroupBy[col], re)
		}
	}
	return 0
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
	if !ok || len(leaves) < 2 {
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
	est, base := b.leafEstimates(leaves, conds)
	order, changed := joinOrder(leaves, conds, est, base, b.positionDistinct(leaves))
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
