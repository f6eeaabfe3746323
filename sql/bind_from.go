package sql

import (
	"maps"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// The FROM clause is bound in two passes. The first (bindFrom) binds every table
// and derived table and the ON conditions, giving each item a range of "FROM
// positions": the FROM clause's output is the concatenation of its tables'
// columns, left to right. WHERE is then bound against those positions, and the
// second pass (buildFrom) builds the joins bottom-up, taking the equalities of
// WHERE that can serve as join keys (FROM a, b WHERE a.x = b.y). Every subtree's
// plan outputs exactly its range of columns, in order, so positions never need
// translating between levels.

type fromJoinKind int

const (
	fromInner fromJoinKind = iota
	fromLeft
	fromRight
	fromFull // FULL [OUTER] JOIN, through the dialect layer
)

// fromNode is one item of the FROM tree.
type fromNode struct {
	plan Plan // a table or derived table; nil for a join

	left, right *fromNode
	kind        fromJoinKind
	conds       []*expr.Expr // ON and USING conjuncts, over FROM positions
	// merged are a FULL JOIN's USING columns, COALESCE(left, right) over FROM
	// positions, output after the two sides' columns (bindUsing).
	merged []*expr.Expr
	// lateral is a LATERAL derived table's correlation with the items on its
	// left (bind_lateral_join.go).
	lateral *correlation
	// outerCorr is the correlation of a derived table of a correlated
	// subquery's FROM with the query enclosing that subquery
	// (bindOuterDerived).
	outerCorr *correlation
	on        ast.Node // where the join is written, for errors

	off, n int    // the FROM positions [off, off+n) this item outputs
	scope  *scope // its columns, idx = FROM position
}

// bindFromWhere binds FROM and WHERE: the plan that yields the filtered rows and
// the scope naming its columns.
func (b *binder) bindFromWhere(sel *ast.SelectStmt) (Plan, *scope, error) {
	if sel.From == nil && b.pendingCorr == nil {
		// SELECT without FROM reads one row of no columns.
		var p Plan = &Values{Rows: [][]*expr.Expr{{}}, Out: types.Schema{}}
		sc := &scope{}
		if sel.Where != nil {
			subs := &subqueries{base: 0}
			w, err := b.bindWhere(sc, sel.Where, subs)
			if err != nil {
				return nil, nil, err
			}
			p = &Filter{Input: applySubqueries(p, subs), Cond: w}
		}
		return p, sc, nil
	}
	corr := b.pendingCorr
	b.pendingCorr = nil
	savedFrom, savedLaterals, savedTables := b.corrFrom, b.laterals, b.corrTables
	b.corrFrom, b.laterals, b.corrTables = corr, nil, nil
	defer func() { b.corrFrom, b.laterals, b.corrTables = savedFrom, savedLaterals, savedTables }()
	var root *fromNode
	var err error
	if sel.From == nil {
		// A subquery without FROM, which may read the enclosing query's
		// columns: one row of no columns.
		root = &fromNode{plan: &Values{Rows: [][]*expr.Expr{{}}, Out: types.Schema{}}, scope: &scope{}}
	} else {
		root, err = b.bindFrom(sel.From.TableRefs, 0)
	}
	b.corrFrom = nil
	if err != nil {
		return nil, nil, err
	}
	if corr != nil {
		// The forced columns first: the SELECTs of a set operation must
		// carry them in one order.
		corr.cols = append([]column{}, corr.forced...)
		for _, c := range freeColumns(sel, root.scope, corr.outer) {
			if !hasColumn(corr.cols, c) {
				corr.cols = append(corr.cols, c)
			}
		}
		for _, l := range b.laterals {
			corr.cols = appendFree(corr.cols, l.call, root.scope, corr.outer)
		}
		for _, t := range b.corrTables {
			for _, c := range t.outerCorr.cols {
				if !hasColumn(corr.cols, c) {
					corr.cols = append(corr.cols, c)
				}
			}
		}
		if len(corr.cols) > 0 {
			return b.bindCorrelatedFromWhere(sel, root, corr)
		}
	}
	var where []*expr.Expr
	subs := &subqueries{base: root.n}
	if sel.Where != nil {
		w, err := b.bindWhere(root.scope, sel.Where, subs)
		if err != nil {
			return nil, nil, err
		}
		where = conjuncts(w)
	}
	if len(subs.joins) > 0 && !root.hasLateral() {
		where = b.pushSemiJoins(root, subs, where)
	}
	var p Plan
	if !root.hasLateral() {
		if p, err = b.buildReordered(root, &where); err != nil {
			return nil, nil, err
		}
	}
	if p == nil {
		if p, err = b.buildFrom(root, &where, false); err != nil {
			return nil, nil, err
		}
	}
	// The subqueries' columns come after the FROM's: WHERE reads them. The
	// conditions that read none go first, so that a correlated subquery's
	// domain is that of the rows they keep (TPC-H q17: the parts of one
	// brand and container, not every part).
	if len(subs.joins) > 0 {
		var early, late []*expr.Expr
		for _, c := range where {
			if slices.ContainsFunc(c.Columns(nil), func(col int) bool { return col >= root.n }) {
				late = append(late, c)
			} else {
				early = append(early, c)
			}
		}
		if len(early) > 0 {
			p = &Filter{Input: p, Cond: and(early...)}
		}
		where = late
	}
	p = applySubqueries(p, subs)
	if len(where) > 0 {
		p = &Filter{Input: p, Cond: and(where...)}
	}
	return p, root.scope, nil
}

func (b *binder) bindWhere(sc *scope, n ast.ExprNode, subs *subqueries) (*expr.Expr, error) {
	conj := map[ast.ExprNode]bool{}
	topConjuncts(n, conj)
	w, err := b.bindExpr(&exprCtx{scope: sc, clause: "WHERE", subs: subs, conjuncts: conj}, n)
	if err != nil {
		return nil, err
	}
	return b.boolean(w, "WHERE", n)
}

// topConjuncts marks the conjuncts of condition n as written: the operands
// of its top-level ANDs, through parentheses. Such a conjunct filters: where
// it is NULL its row goes as where it is FALSE.
func topConjuncts(n ast.ExprNode, into map[ast.ExprNode]bool) {
	into[n] = true
	switch x := n.(type) {
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			topConjuncts(x.L, into)
			topConjuncts(x.R, into)
		}
	case *ast.ParenthesesExpr:
		topConjuncts(x.Expr, into)
	}
}

// bindFrom binds one FROM item whose columns start at FROM position off.
func (b *binder) bindFrom(rs ast.ResultSetNode, off int) (*fromNode, error) {
	switch n := rs.(type) {
	case *ast.Join:
		if n.Right == nil {
			return b.bindFrom(n.Left, off)
		}
		return b.bindJoin(n, off)
	case *ast.TableSource:
		alias := n.AsName.O
		var p Plan
		switch src := n.Source.(type) {
		case *ast.TableName:
			if c, ok := b.lookupCTE(src.Name.O); ok && src.Schema.L == "" {
				q, err := b.bindCTE(c)
				if err != nil {
					return nil, err
				}
				p = q
				if alias == "" {
					alias = c.name
				}
				break
			}
			t, err := b.lookupTable(src)
			if err != nil {
				return nil, err
			}
			if b.rowIDFor != "" && t.Name == b.rowIDFor && t.IsStored() {
				t, b.rowIDFor = withRowID(t), ""
			}
			p = &Scan{Table: t}
			if alias == "" {
				alias = t.Name
				if t.IsSystem() {
					alias = src.Name.O // pg_class, not pg_catalog.pg_class
				}
			}
		case *ast.SelectStmt:
			if calls, names, ok := lateralArrays(src); ok && b.corrFrom != nil { // bind_lateral_arrays.go
				node := b.bindLateralArrays(calls, names, off)
				node.scope = schemaScope(node.plan.Schema(), alias, off)
				return node, nil
			}
			if call, ok := lateralCall(src); ok && b.corrFrom != nil {
				name := src.Fields.Fields[0].AsName.O
				if name == "" {
					name = "generate_series"
				}
				node := b.bindLateralItem(call, name, off)
				node.scope = schemaScope(node.plan.Schema(), alias, off)
				return node, nil
			}
			if b.corrFrom != nil {
				return b.bindOuterDerived(src, alias, off)
			}
			q, err := b.bindQuery(src)
			if err != nil {
				return nil, err
			}
			p = q
		case *ast.Join:
			return b.bindFrom(src, off)
		case *ast.SetOprStmt:
			if b.corrFrom != nil {
				return b.bindOuterDerived(src, alias, off)
			}
			q, err := b.bindSetOpr(src)
			if err != nil {
				return nil, err
			}
			p = q
		default:
			return nil, b.errorf(ErrUnsupported, nil, "this FROM item is not supported")
		}
		s := p.Schema()
		node := &fromNode{plan: p, off: off, n: len(s), scope: schemaScope(s, alias, off)}
		if scan, ok := p.(*Scan); ok {
			oid := scan.Table.OID
			if scan.Table.IsSystem() {
				oid = SystemOID(scan.Table.Name)
			}
			node.scope.tableOIDs = map[string]int64{alias: oid}
		}
		return node, nil
	}
	return nil, b.errorf(ErrUnsupported, nil, "this FROM item is not supported")
}

// lookupTable finds a table of the catalog.
func (b *binder) lookupTable(tn *ast.TableName) (*Table, error) {
	name := tn.Name.O
	// pg_catalog comes first on every search path, as in PostgreSQL.
	if s := tn.Schema.L; s == "" || s == PgCatalog || s == InformationSchema {
		if t, ok := SystemTable(s, name); ok {
			return t, nil
		}
	}
	if s := tn.Schema.L; s != "" && s != "public" {
		return nil, Errorf(ErrUnknownTable, b.identPos(tn.Schema.O, tableAfter...), "relation \"%s.%s\" does not exist", s, name)
	}
	var t *Table
	ok := false
	if b.cat != nil {
		t, ok = b.cat.Table(name)
	}
	if !ok {
		return nil, Errorf(ErrUnknownTable, b.identPos(tn.Name.O, tableAfter...), "relation \"%s\" does not exist", name)
	}
	return t, nil
}

func (b *binder) bindJoin(n *ast.Join, off int) (*fromNode, error) {
	left, err := b.bindFrom(n.Left, off)
	if err != nil {
		return nil, err
	}
	var right *fromNode
	if ts, ok := n.Right.(*ast.TableSource); ok && ts.Lateral {
		right, err = b.bindLateral(ts, ts.Source, left, off+left.n)
	} else {
		right, err = b.bindFrom(n.Right, off+left.n)
	}
	if err != nil {
		return nil, err
	}
	node := &fromNode{left: left, right: right, off: off, n: left.n + right.n}
	switch n.Tp {
	case ast.LeftJoin:
		node.kind = fromLeft
	case ast.RightJoin:
		node.kind = fromRight
	}
	if corr := right.lateral; corr != nil {
		if node.kind == fromRight || n.On != nil && b.fullJoin(n.On.Expr) {
			c := corr.cols[0]
			err := Errorf(ErrInvalidColumnReference, b.identPos("lateral"), "invalid reference to FROM-clause entry for table \"%s\"", c.table)
			err.Detail = "The combining JOIN type must be INNER or LEFT for a LATERAL reference."
			return nil, err
		}
		conds, err := b.lateralConds(right, corr)
		if err != nil {
			return nil, err
		}
		node.conds = append(node.conds, conds...)
	}
	// Copy the columns: USING hides some in this scope, not in the children's.
	sc := &scope{cols: append(append([]column{}, left.scope.cols...), right.scope.cols...)}
	if len(left.scope.tableOIDs)+len(right.scope.tableOIDs) > 0 {
		sc.tableOIDs = maps.Clone(left.scope.tableOIDs)
		if sc.tableOIDs == nil {
			sc.tableOIDs = map[string]int64{}
		}
		maps.Copy(sc.tableOIDs, right.scope.tableOIDs)
	}
	sc.star = append([]int{}, left.scope.star...)
	for _, i := range right.scope.star {
		sc.star = append(sc.star, len(left.scope.cols)+i)
	}
	node.scope = sc

	// A FULL JOIN comes as a LEFT JOIN whose ON condition the dialect layer
	// marked; its USING (or NATURAL), as a fact about that condition.
	var full *joinUsing
	if n.On != nil && b.fullJoin(n.On.Expr) {
		if node.kind != fromLeft || len(n.Using) > 0 || n.NaturalJoin {
			return nil, b.errorf(ErrUnsupported, n.On.Expr, "this form of FULL JOIN is not supported")
		}
		node.kind = fromFull
		full = &joinUsing{}
		if u, ok := b.facts.joinUsing[n.On.Expr.OriginTextPosition()]; ok {
			full = &u
		}
	}
	var using []string
	for _, c := range n.Using {
		using = append(using, c.Name.O)
	}
	if full != nil {
		using = append(using, full.names...)
	}
	if n.NaturalJoin || full != nil && full.natural {
		for _, i := range left.scope.star {
			c := left.scope.cols[i]
			if !c.hidden && len(right.scope.lookup("", c.name)) > 0 {
				using = append(using, c.name)
			}
		}
	}
	if len(using) > 0 {
		if err := b.bindUsing(node, using); err != nil {
			return nil, err
		}
	}
	if n.On != nil && (full == nil || len(full.names) == 0 && !full.natural) {
		e, err := b.bindExpr(&exprCtx{scope: sc, clause: "JOIN conditions"}, n.On.Expr)
		if err != nil {
			return nil, err
		}
		if e, err = b.boolean(e, "JOIN/ON", n.On.Expr); err != nil {
			return nil, err
		}
		node.conds = append(node.conds, conjuncts(e)...)
		node.on = n.On.Expr
	}
	return node, nil
}

// bindUsing turns JOIN ... USING (a, ...) into equality conditions. As in
// PostgreSQL, the pair shows as one column, first in SELECT *; it is the left
// one (the right one for a RIGHT JOIN, the side that is never NULL-extended),
// and the other is reachable only qualified. Of a FULL JOIN, where either side
// may be NULL-extended, it is a column of its own, COALESCE(left, right), at
// the FROM positions after the two sides' (node.merged), and both sides'
// columns are reachable only qualified.
func (b *binder) bindUsing(node *fromNode, names []string) error {
	nl := len(node.left.scope.cols)
	find := func(s *scope, name, side string) (int, error) {
		found := s.lookup("", name)
		switch len(found) {
		case 0:
			return 0, Errorf(ErrUnknownColumn, b.identPos(name, "(", ","), "column \"%s\" specified in USING clause does not exist in %s table", name, side)
		case 1:
			return found[0], nil
		}
		return 0, Errorf(ErrAmbiguousColumn, b.identPos(name, "(", ","), "common column name \"%s\" appears more than once in %s table", name, side)
	}
	usedL, usedR := map[int]bool{}, map[int]bool{}
	var star []int
	for _, name := range names {
		li, err := find(node.left.scope, name, "left")
		if err != nil {
			return err
		}
		ri, err := find(node.right.scope, name, "right")
		if err != nil {
			return err
		}
		lc, rc := node.left.scope.cols[li], node.right.scope.cols[ri]
		eq, err := b.call(nil, "=", expr.Column(lc.idx, lc.typ, lc.name), expr.Column(rc.idx, rc.typ, rc.name))
		if err != nil {
			return err
		}
		node.conds = append(node.conds, eq)
		usedL[li], usedR[ri] = true, true
		if node.kind == fromFull {
			merged, err := b.call(nil, "coalesce", eq.Args[0], eq.Args[1])
			if err != nil {
				return err
			}
			node.scope.cols[li].hidden, node.scope.cols[nl+ri].hidden = true, true
			node.scope.cols = append(node.scope.cols, column{name: name, typ: merged.Type, idx: node.off + node.n})
			node.merged = append(node.merged, merged)
			node.n++
			star = append(star, len(node.scope.cols)-1)
			continue
		}
		keep, hide := li, nl+ri
		if node.kind == fromRight {
			keep, hide = hide, keep
		}
		node.scope.cols[hide].hidden = true
		star = append(star, keep)
	}
	for _, i := range node.left.scope.star {
		if !usedL[i] {
			star = append(star, i)
		}
	}
	for _, i := range node.right.scope.star {
		if !usedR[i] {
			star = append(star, nl+i)
		}
	}
	node.scope.star = star
	return nil
}

// buildFrom builds the plan of a FROM item. where holds the WHERE conjuncts not
// yet placed; an inner join that is not below the NULL-extended side of an outer
// join takes those that equate its two sides as join keys (below an outer
// join's nullable side that would keep rows WHERE removes).
func (b *binder) buildFrom(node *fromNode, where *[]*expr.Expr, nullable bool) (Plan, error) {
	if node.plan != nil {
		return node.plan, nil
	}
	p, err := b.buildJoin(node, where, nullable)
	if err != nil || len(node.merged) == 0 {
		return p, err
	}
	merged := make([]*expr.Expr, len(node.merged))
	for i, e := range node.merged {
		merged[i] = shift(e, -node.off)
	}
	proj := appendColumns(p, merged).(*Project)
	nj := node.left.n + node.right.n
	for i := range merged {
		proj.Out[nj+i].Name = node.scope.cols[len(node.scope.cols)-len(merged)+i].name
	}
	return proj, nil
}

// buildJoin builds the join of node's two sides, their columns in FROM order
// (without a FULL JOIN's merged USING columns).
func (b *binder) buildJoin(node *fromNode, where *[]*expr.Expr, nullable bool) (Plan, error) {
	lp, err := b.buildFrom(node.left, where, nullable || node.kind == fromRight || node.kind == fromFull)
	if err != nil {
		return nil, err
	}
	rp, err := b.buildFrom(node.right, where, nullable || node.kind == fromLeft || node.kind == fromFull)
	if err != nil {
		return nil, err
	}
	if node.right.lateral != nil {
		rp = lateralDomainOf(rp, lp, node.left, node.right)
	}
	nl, nr := node.left.n, node.right.n
	n := nl + nr
	conds := append([]*expr.Expr{}, node.conds...)
	if node.kind == fromInner && !nullable {
		var kept []*expr.Expr
		for _, w := range *where {
			if _, _, ok := equiSides(w, node.off, node.off+nl, node.off+n); ok {
				conds = append(conds, w)
			} else {
				kept = append(kept, w)
			}
		}
		*where = kept
	}

	// A RIGHT JOIN is built as a LEFT JOIN with the sides swapped; phys maps a
	// FROM position to its position in the join's physical input (left ++ right).
	swapped := node.kind == fromRight
	physL, physR, nL := lp, rp, nl
	if swapped {
		physL, physR, nL = rp, lp, nr
	}
	phys := make(map[int]int, n)
	for i := 0; i < n; i++ {
		switch {
		case !swapped:
			phys[node.off+i] = i
		case i < nl:
			phys[node.off+i] = nr + i
		default:
			phys[node.off+i] = i - nl
		}
	}
	var keysL, keysR, extra []*expr.Expr
	for _, c := range conds {
		c = c.Remap(phys)
		if l, r, ok := equiSides(c, 0, nL, n); ok {
			keysL = append(keysL, l)
			keysR = append(keysR, shift(r, -nL))
		} else {
			extra = append(extra, c)
		}
	}
	// Keys that are not plain columns (a cast to the common type, an expression)
	// are computed by a Project below the join and dropped above it.
	lCols, lExtra := keyColumns(keysL, nL)
	rCols, rExtra := keyColumns(keysR, n-nL)
	if len(lExtra) > 0 {
		physL = appendColumns(physL, lExtra)
		for i, c := range extra {
			extra[i] = shiftFrom(c, nL, len(lExtra))
		}
	}
	if len(rExtra) > 0 {
		physR = appendColumns(physR, rExtra)
	}
	out := append(append(types.Schema{}, physL.Schema()...), physR.Schema()...)
	kind := InnerJoin
	switch node.kind {
	case fromLeft, fromRight:
		kind = LeftJoin
	case fromFull:
		kind = FullJoin
	}
	j := &Join{Left: physL, Right: physR, Kind: kind, LeftKeys: lCols, RightKeys: rCols, Extra: and(extra...), Out: out}
	if !swapped && len(lExtra) == 0 && len(rExtra) == 0 {
		return j, nil
	}
	// Back to this item's columns in FROM order.
	names := append(append(types.Schema{}, lp.Schema()...), rp.Schema()...)
	exprs := make([]*expr.Expr, n)
	for i := range exprs {
		p := phys[node.off+i]
		if p >= nL {
			p += len(lExtra)
		}
		exprs[i] = expr.Column(p, out[p].Type, out[p].Name)
	}
	return &Project{Input: j, Exprs: exprs, Out: names}, nil
}

// equiSides recognises l = r where l reads only positions [lo, mid) and r only
// [mid, hi) (or the other way round), returning the two sides in that order.
func equiSides(e *expr.Expr, lo, mid, hi int) (l, r *expr.Expr, ok bool) {
	if e.Kind != expr.KindCall || e.Func != "=" || len(e.Args) != 2 {
		return nil, nil, false
	}
	in := func(x *expr.Expr, a, b int) bool {
		cols := x.Columns(nil)
		if len(cols) == 0 {
			return false
		}
		for _, c := range cols {
			if c < a || c >= b {
				return false
			}
		}
		return true
	}
	a, c := e.Args[0], e.Args[1]
	switch {
	case in(a, lo, mid) && in(c, mid, hi):
		return a, c, true
	case in(c, lo, mid) && in(a, mid, hi):
		return c, a, true
	}
	return nil, nil, false
}

// shift moves every column reference of e by d.
func shift(e *expr.Expr, d int) *expr.Expr {
	return shiftFrom(e, 0, d)
}

// shiftFrom moves the column references of e at or past from by d.
func shiftFrom(e *expr.Expr, from, d int) *expr.Expr {
	m := map[int]int{}
	for _, c := range e.Columns(nil) {
		m[c] = c
		if c >= from {
			m[c] = c + d
		}
	}
	return e.Remap(m)
}

// keyColumns turns join key expressions over an input of width n into column
// positions; keys that are not plain columns become extra columns n, n+1, ...
// A column cast from a narrower form of a type to that type (an integer to
// bigint), which leaves its values as they are, is the column.
func keyColumns(keys []*expr.Expr, n int) (cols []int, extra []*expr.Expr) {
	for _, k := range keys {
		if k.Kind == expr.KindCast && k.Args[0].Kind == expr.KindColumn && k.Args[0].Type.Narrow() && k.Args[0].Type.Base() == k.Type {
			k = k.Args[0]
		}
		if k.Kind == expr.KindColumn {
			cols = append(cols, k.Col)
			continue
		}
		found := -1
		for i, e := range extra {
			if sameExpr(e, k) {
				found = i
			}
		}
		if found < 0 {
			extra = append(extra, k)
			found = len(extra) - 1
		}
		cols = append(cols, n+found)
	}
	return cols, extra
}

// appendColumns projects p's columns followed by the extra expressions.
func appendColumns(p Plan, extra []*expr.Expr) Plan {
	s := p.Schema()
	exprs := make([]*expr.Expr, 0, len(s)+len(extra))
	out := append(types.Schema{}, s...)
	for i, f := range s {
		exprs = append(exprs, expr.Column(i, f.Type, f.Name))
	}
	for _, e := range extra {
		exprs = append(exprs, e)
		out = append(out, types.Field{Name: "?column?", Type: e.Type})
	}
	return &Project{Input: p, Exprs: exprs, Out: out}
}
