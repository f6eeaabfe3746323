package sql

import (
	"math"
	"slices"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Join order. A FROM of inner joins only (commas, [INNER] JOIN, CROSS JOIN)
// is joined in an order chosen from the equalities between its tables,
// whatever the order of the FROM: FROM part, supplier, lineitem WHERE p = l.p
// AND s = l.s joins part to lineitem, then supplier, instead of crossing part
// with supplier. ON conditions of inner joins count as WHERE conditions. The
// result has the FROM's columns in the FROM's order.
//
// Each join's right input is the hash join's build side, held in memory, and
// its left input streams through. When the catalog estimates every table's
// rows (its connectors': a stored table's count, a file's size over its
// lines' length) and none is a stream, the tree is the cheapest of all trees
// of up to dpLeaves tables (bushyOrder, dynamic programming over the sets of
// tables, as System R's optimizer but bushy): a join costs the rows it
// probes, twice the rows it builds (a hash table's insert costs more than
// its lookup, and a small build side is copied to every instance) and the
// rows it yields, the bigger side of each join probing. So TPC-H q3 builds
// customer's filtered rows into orders' and then lineitem probes their
// join, instead of lineitem probing orders and then customer. A set's rows
// are the product of its tables' rows after their own WHERE conditions (each
// keeps a guessed fraction: a tenth for an equality with a constant, a third
// for another condition) and of 1/max(d(a), d(b)) for each equality a = b
// between them, where d is a column's distinct values (the catalog's
// estimate, else its table's rows), each capped by the other side's rows
// (its values are taken to be among the other side's, as a foreign key's
// are among its key's), so that the estimate of a set is the same whatever
// order joins it. Tables are crossed only where no equality connects a set.
//
// With a stream (infinite rows) among the tables, or more than dpLeaves of
// them, the tree is left deep (greedyOrder): it starts with the table of most
// rows after its own conditions and then takes, each time, the connected
// table that makes the smallest join, the one of fewer rows on a tie: the
// biggest table (a stream, which must not be built) probes, the others are
// built. So a join on a column of few values (lineitem to customer on a
// nation key) waits until a key (the order's customer) has narrowed it.
// Without estimates the tables are taken greedily in FROM order, each time
// the first connected one. Either way, with no connected table left, the
// next is crossed.

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

// dpLeaves is the most tables bushyOrder orders: it looks at every split of
// every set of them, 3^n pairs, 59049 for 10 tables.
const dpLeaves = 10

// joinTree is a join order: a leaf (the index of a FROM table), or the join
// of a left tree, which probes, and a right one, which is built.
type joinTree struct {
	leaf        int
	left, right *joinTree
}

// leftDeep returns the left-deep tree joining the leaves of order in order.
func leftDeep(order []int) *joinTree {
	t := &joinTree{leaf: order[0]}
	for _, i := range order[1:] {
		t = &joinTree{left: t, right: &joinTree{leaf: i}}
	}
	return t
}

// asWritten reports whether t is the left-deep tree of the leaves in FROM
// order, next the index of the first of t's leaves.
func (t *joinTree) asWritten(next int) bool {
	if t.left == nil {
		return t.leaf == next
	}
	return t.right.left == nil && t.left.asWritten(next) && t.right.leaf == next+t.left.size()
}

// size is the number of t's leaves.
func (t *joinTree) size() int {
	if t.left == nil {
		return 1
	}
	return t.left.size() + t.right.size()
}

// joinOrder returns the tree by which to join leaves under conds, and
// whether it differs from the FROM's (left deep, in FROM order); est, if not
// nil, is each leaf's estimated rows after its own conditions and base its
// rows before them, and ndv the distinct values of a FROM position (nil, or
// 0 for a position: unknown).
func joinOrder(leaves []*fromNode, conds []*expr.Expr, est, base []float64, ndv func(pos int) float64) (*joinTree, bool) {
	owner := leafOwners(leaves)
	// edges[i][j]: the equalities between leaves i and j, as FROM positions
	// (-1 for a side that is not a plain column).
	// k is the equality's class (equalityClasses), or, for one of other
	// expressions, a class of its own below 0.
	type eq struct{ a, b, k int }
	class := equalityClasses(conds, owner)
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
	for n, c := range conds {
		if c.Kind != expr.KindCall || c.Func != "=" || len(c.Args) != 2 {
			continue
		}
		a, oka := onlyLeaf(c.Args[0], owner)
		b, okb := onlyLeaf(c.Args[1], owner)
		if oka && okb && a != b {
			pa, pb := pos(c.Args[0]), pos(c.Args[1])
			k, ok := class[pa]
			if !ok {
				k = -1 - n
			}
			edges[a][b] = append(edges[a][b], eq{pa, pb, k})
			edges[b][a] = append(edges[b][a], eq{pb, pa, k})
		}
	}
	// classes is the classes of the equalities between leaves i and j.
	classes := func(i, j int) []int {
		var ks []int
		for _, e := range edges[i][j] {
			ks = append(ks, e.k)
		}
		return ks
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
	// sel is the fraction of the pairs of rows of leaves i and j their
	// equalities keep, 0 when they have none.
	sel := func(i, j int) float64 {
		if len(edges[i][j]) == 0 {
			return 0
		}
		if est == nil {
			return 1
		}
		// di and dj: the distinct values of i's and j's sides of their
		// equalities, taken together (as a composite key's columns,
		// partsupp's), so at most their rows; and, as a foreign key's
		// values are among its key's, at most the other side's rows before
		// its own conditions.
		di, dj := 1.0, 1.0
		for _, e := range edges[i][j] {
			di *= distinct(e.a, i)
			dj *= distinct(e.b, j)
		}
		di = min(di, est[i], base[j])
		dj = min(dj, est[j], base[i])
		return 1 / max(di, dj, 1)
	}
	finite := est != nil && len(leaves) <= dpLeaves
	for _, n := range est {
		finite = finite && !math.IsInf(n, 1)
	}
	var t *joinTree
	if finite {
		t = bushyOrder(est, sel, classes)
	} else {
		t = leftDeep(greedyOrder(len(leaves), est, sel))
	}
	return t, !t.asWritten(0)
}

// columnEquality returns the sides of c if it is an equality of two columns
// of one type from different leaves.
func columnEquality(c *expr.Expr, owner map[int]int) (a, b *expr.Expr, ok bool) {
	if c.Kind != expr.KindCall || c.Func != "=" || len(c.Args) != 2 {
		return nil, nil, false
	}
	a, b = c.Args[0], c.Args[1]
	if a.Kind != expr.KindColumn || b.Kind != expr.KindColumn || a.Type != b.Type {
		return nil, nil, false
	}
	la, oka := owner[a.Col]
	lb, okb := owner[b.Col]
	return a, b, oka && okb && la != lb
}

// impliedEqualities returns the equalities that conds' column equalities
// imply between columns of different leaves and that they do not state:
// TPC-H q5's c_nationkey = s_nationkey and s_nationkey = n_nationkey imply
// c_nationkey = n_nationkey, which lets customer join nation (and region)
// before orders and lineitem reach supplier. (Inner joins' conditions only:
// a NULL passes none of them.)
func impliedEqualities(conds []*expr.Expr, owner map[int]int) []*expr.Expr {
	class := equalityClasses(conds, owner)
	cols := map[int][]*expr.Expr{} // each class's columns, in the order met
	stated := map[[2]int]bool{}
	for _, c := range conds {
		a, b, ok := columnEquality(c, owner)
		if !ok {
			continue
		}
		stated[[2]int{a.Col, b.Col}], stated[[2]int{b.Col, a.Col}] = true, true
		for _, e := range []*expr.Expr{a, b} {
			k := class[e.Col]
			if !slices.ContainsFunc(cols[k], func(x *expr.Expr) bool { return x.Col == e.Col }) {
				cols[k] = append(cols[k], e)
			}
		}
	}
	var implied []*expr.Expr
	for _, c := range conds { // in conds' order, for a stable plan
		a, _, ok := columnEquality(c, owner)
		if !ok || cols[class[a.Col]] == nil {
			continue
		}
		k := class[a.Col]
		members := cols[k]
		delete(cols, k)
		for i, x := range members {
			for _, y := range members[i+1:] {
				if owner[x.Col] != owner[y.Col] && !stated[[2]int{x.Col, y.Col}] {
					implied = append(implied, expr.Call("=", types.BoolType, x, y))
				}
			}
		}
	}
	return implied
}

// treeEqualities returns the equalities of the classes of conds' column
// equalities (equalityClasses) that tree t's joins apply: at each join, for
// each class with columns on both its sides, the first of conds between
// them, else one implied (impliedEqualities). By induction the columns of a
// class that a tree joins are all equal, so one equality per class and join
// is enough, and the other stated ones (q9's l_partkey = p_partkey where
// lineitem probes partsupp joined with part) are left out instead of
// hashed as further keys.
func treeEqualities(t *joinTree, conds []*expr.Expr, owner map[int]int, class map[int]int) []*expr.Expr {
	var keys []int                    // the classes in the order met
	members := map[int][]*expr.Expr{} // each class's columns, in the order met
	for _, c := range conds {
		a, b, ok := columnEquality(c, owner)
		if !ok {
			continue
		}
		k := class[a.Col]
		if members[k] == nil {
			keys = append(keys, k)
		}
		for _, e := range []*expr.Expr{a, b} {
			if !slices.ContainsFunc(members[k], func(x *expr.Expr) bool { return x.Col == e.Col }) {
				members[k] = append(members[k], e)
			}
		}
	}
	var out []*expr.Expr
	var walk func(t *joinTree) map[int]bool
	walk = func(t *joinTree) map[int]bool {
		if t.left == nil {
			return map[int]bool{t.leaf: true}
		}
		l, r := walk(t.left), walk(t.right)
		for _, k := range keys {
			var eq *expr.Expr
			for _, c := range conds {
				a, b, ok := columnEquality(c, owner)
				if ok && class[a.Col] == k && (l[owner[a.Col]] && r[owner[b.Col]] || r[owner[a.Col]] && l[owner[b.Col]]) {
					eq = c
					break
				}
			}
			if eq == nil {
				var x, y *expr.Expr
				for _, m := range members[k] {
					switch {
					case x == nil && l[owner[m.Col]]:
						x = m
					case y == nil && r[owner[m.Col]]:
						y = m
					}
				}
				if x != nil && y != nil {
					eq = expr.Call("=", types.BoolType, x, y)
				}
			}
			if eq != nil {
				out = append(out, eq)
			}
		}
		for i := range r {
			l[i] = true
		}
		return l
	}
	walk(t)
	return out
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
// read only its columns (a column's range by the catalog's sample of it,
// rangeFactor; the others by selectivity), and before them, or nils
// when the catalog cannot estimate one of them.
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
	ndv := b.positionDistinct(leaves)
	own := make([][]*expr.Expr, len(leaves)) // each leaf's own conditions
	for _, c := range conds {
		if leaf, ok := onlyLeaf(c, owner); ok {
			own[leaf] = append(own[leaf], c)
		}
	}
	for i, l := range leaves {
		f, ranged := rangeFactor(b.cat, own[i], func(pos int) (*Table, int, bool) {
			scan, ok := l.plan.(*Scan)
			if !ok {
				return nil, 0, false
			}
			return scanColumn(scan, pos-l.off)
		})
		est[i] *= f
		for j, c := range own[i] {
			if !ranged[j] {
				est[i] *= selectivity(c, ndv)
			}
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

// selectivity is the fraction of rows a condition is guessed to keep: for
// an equality of a column with a constant, one of the column's distinct
// values (ndv, nil or 0: unknown), else a tenth; for an OR, the sum of its
// terms', for an AND their product; a third for any other condition.
// TPC-H q8's p_type = 'SMALL PLATED COPPER' keeps one of 150 types, which
// makes part narrow lineitem more than the year's orders of a region.
func selectivity(c *expr.Expr, ndv func(col int) float64) float64 {
	if c.Kind != expr.KindCall {
		return 1.0 / 3
	}
	switch {
	case c.Func == "=" && len(c.Args) == 2:
		col, lit := c.Args[0], c.Args[1]
		if col.Kind == expr.KindLiteral {
			col, lit = lit, col
		}
		if lit.Kind != expr.KindLiteral {
			break
		}
		if col.Kind == expr.KindCast {
			col = col.Args[0]
		}
		if col.Kind == expr.KindColumn && ndv != nil {
			if d := ndv(col.Col); d >= 1 {
				return 1 / d
			}
		}
		return 0.1
	case c.Func == "or":
		sum := 0.0
		for _, a := range c.Args {
			sum += selectivity(a, ndv)
		}
		return min(sum, 1)
	case c.Func == "and":
		prod := 1.0
		for _, a := range c.Args {
			prod *= selectivity(a, ndv)
		}
		return prod
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
		ndv := func(col int) float64 { return columnDistinct(p.Input, col, re) }
		scan, isScan := p.Input.(*Scan)
		if !isScan {
			return n * selectivity(p.Cond, ndv), ok
		}
		conds := conjuncts(p.Cond)
		f, ranged := rangeFactor(re, conds, func(col int) (*Table, int, bool) { return scanColumn(scan, col) })
		n *= f
		for i, c := range conds {
			if !ranged[i] {
				n *= selectivity(c, ndv)
			}
		}
		return n, ok
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
	owner := leafOwners(leaves)
	var implied []*expr.Expr
	if est != nil {
		implied = impliedEqualities(conds, owner)
	}
	order, changed := joinOrder(leaves, append(conds, implied...), est, base, b.positionDistinct(leaves))
	if !changed {
		return nil, nil
	}
	if est != nil {
		// The classes' equalities the tree's joins need in place of them all.
		class := equalityClasses(conds, owner)
		var kept []*expr.Expr
		for _, c := range conds {
			if _, _, ok := columnEquality(c, owner); !ok {
				kept = append(kept, c)
			}
		}
		conds = append(kept, treeEqualities(order, conds, owner, class)...)
	}
	// Renumber the FROM positions in the tree's order of leaves, so that
	// each of its joins reads a range of them, and build its joins.
	newPos := map[int]int{}
	off := 0
	var tree func(t *joinTree) *fromNode
	tree = func(t *joinTree) *fromNode {
		if t.left == nil {
			l := leaves[t.leaf]
			for p := 0; p < l.n; p++ {
				newPos[l.off+p] = off + p
			}
			off += l.n
			return &fromNode{plan: l.plan, off: off - l.n, n: l.n}
		}
		start := off
		left := tree(t.left)
		right := tree(t.right)
		return &fromNode{left: left, right: right, off: start, n: left.n + right.n}
	}
	joined := tree(order)
	remapped := make([]*expr.Expr, len(conds))
	for i, c := range conds {
		remapped[i] = c.Remap(newPos)
	}
	p, err := b.buildFrom(joined, &remapped, false)
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
