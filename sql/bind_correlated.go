package sql

import (
	"math"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Correlated subqueries, decorrelated as Neumann and Kemper's "Unnesting
// Arbitrary Queries" does: a subquery S that reads columns c of its enclosing
// query is computed once for each distinct value of c (its domain D), not
// once per row. D is the distinct c of the enclosing query's input; S's FROM
// is joined with D and S's WHERE becomes that join's condition, so the outer
// references are D's columns; S's result carries D's columns along (its
// aggregates grouped by them too), and the enclosing query's rows join it on
// c = D, NULL-safely. For an aggregate S the join with D is an outer one that
// keeps every D row, so a domain value no row matches still gets its
// aggregates of no rows (COUNT(*) then counts a marker column of S's side:
// 0, not 1).
//
// Supported: correlation through S's WHERE (any condition: an equality
// becomes a hash join's key, anything else a nested-loop join's condition) and
// its select list, in scalar subqueries (one that does not aggregate is
// checked to have at most one row per D value), EXISTS, IN and op ANY|ALL
// (and their negations). A subquery S2 inside S that reads a column c of the
// query enclosing S makes S correlated on c too (needOuter), so that S2 reads
// c from S's D as it reads S's own columns: references any number of levels
// out. In HAVING and in the select list of a query that aggregates, S reads
// the enclosing query's group keys from the aggregation's output
// (postDomains). ORDER BY ... LIMIT in S is a Top-N per D value
// (topPerDomain). S of set operations has each SELECT correlated on the same
// columns (setCorrelation); a derived table of S's FROM that reads the
// enclosing query is correlated on those columns too (bindOuterDerived).
// Refused with a message: correlation inside a WITH query of S, LIMIT after
// S's set operations.

// corrKind is what a correlated subquery is used as.
type corrKind int

const (
	corrScalar  corrKind = iota // (SELECT agg(...) ...)
	corrExists                  // EXISTS (SELECT ...)
	corrIn                      // x IN (SELECT y ...), x op ANY|ALL (SELECT y ...)
	corrLateral                 // FROM t, LATERAL (SELECT ...) (bind_lateral_join.go)
)

// correlation is a correlated subquery being bound.
type correlation struct {
	outer *scope
	kind  corrKind
	cols  []column // the enclosing columns the subquery reads, as the enclosing scope has them
	// outerExprs, for a subquery computed after the enclosing query's
	// aggregation (HAVING), are cols over the aggregation's output: its
	// group keys (postDomains).
	outerExprs []*expr.Expr
	at         int // where D's columns are in the subquery's scope
	// forced are enclosing columns a subquery nested in this one reads
	// (needOuter): columns of D whether or not this one names them.
	forced []column
	// aggregated: the subquery aggregates, so it has one row per D value
	aggregated bool
	// nullRejected: a scalar subquery whose NULL value drops the enclosing
	// row (it is compared in a conjunct of WHERE: l_quantity < (SELECT ...)).
	nullRejected bool
	// innerJoin: the subquery is NULL for the D values no row of it
	// matches (nullOnEmpty) and nullRejected, so their rows go whatever it
	// computes for them: D is joined to its FROM, and it to the enclosing
	// input, by inner joins, which need not keep every D value.
	innerJoin bool
	// est, for an innerJoin, estimates the enclosing input's parts
	// (domainSource); nil when the catalog cannot.
	est RowEstimator
	// exists, of an EXISTS subquery that can be a semi join, is its FROM and
	// the rest of its WHERE (bind_semijoin.go).
	exists *existsForm
	domain *Domain // stands for D in the subquery's plan until the join (applySubqueries)
	// domains, of a subquery of set operations, are its SELECTs' (domain is
	// nil): D stands in each of them (setCorrelation).
	domains []*Domain
	// subDomains are the domains of derived tables in the subquery's FROM
	// that read the enclosing query too (bindOuterDerived): the distinct
	// values of some of D's columns.
	subDomains []subDomain
}

// subDomain is the domain of a derived table of a correlated subquery's
// FROM: the distinct values of D's columns cols (positions in its cols).
type subDomain struct {
	domains []*Domain
	cols    []int
}

// setCorrelation is a correlated subquery of set operations being bound:
// each of its SELECTs is bound as a correlated subquery (a branch), all on
// the same enclosing columns in one order (forced on those that do not read
// them), so that each yields its items then D's columns, which the set
// operations take as any other: UNION, INTERSECT and EXCEPT per D value.
type setCorrelation struct {
	outer    *scope
	kind     corrKind
	forced   []column
	branches []*correlation
}

// setRetry is the error of a set operation whose SELECTs are not all
// correlated on cols: bindSubquery binds it again with them forced.
type setRetry struct{ cols []column }

func (e *setRetry) Error() string {
	return "correlated SELECTs of a set operation on different columns"
}

// branch is the correlation of the next SELECT.
func (sc *setCorrelation) branch() *correlation {
	c := &correlation{outer: sc.outer, kind: sc.kind, forced: sc.forced}
	sc.branches = append(sc.branches, c)
	return c
}

// combined is the correlation of the whole: the enclosing columns any SELECT
// reads; ok is false if not every SELECT is correlated on them in that order.
func (sc *setCorrelation) combined() (*correlation, bool) {
	corr := &correlation{outer: sc.outer, kind: sc.kind}
	for _, c := range sc.branches {
		for _, col := range c.cols {
			if !hasColumn(corr.cols, col) {
				corr.cols = append(corr.cols, col)
			}
		}
	}
	for _, c := range sc.branches {
		if len(c.cols) != len(corr.cols) {
			return corr, len(corr.cols) == 0
		}
		for i := range c.cols {
			if c.cols[i].idx != corr.cols[i].idx {
				return corr, false
			}
		}
		corr.domains = append(corr.domains, c.domain)
	}
	return corr, true
}

// needOuter is the error of a column reference, in a subquery nested in a
// correlated one, to a query enclosing both: the correlated subquery whose
// enclosing scope is scope catches it and is bound again with col in its D,
// which makes col an enclosing column the nested one reads as any other.
// Uncaught, it is err.
type needOuter struct {
	err   *Error
	scope *scope
	col   column
}

func (e *needOuter) Error() string { return e.err.Error() }
func (e *needOuter) Unwrap() error { return e.err }

// Domain stands for the distinct values of the enclosing columns a correlated
// subquery reads, in the subquery's plan until it is joined to the enclosing
// query's input, which gives it its rows. The planner never sees one.
type Domain struct {
	Out types.Schema
}

func (p *Domain) Schema() types.Schema { return p.Out }
func (p *Domain) Inputs() []Plan       { return nil }

// hasColumn reports whether cols has the enclosing column c.
func hasColumn(cols []column, c column) bool {
	for _, d := range cols {
		if d.idx == c.idx {
			return true
		}
	}
	return false
}

// freeColumns lists the enclosing columns sel reads: names in its WHERE and
// select list that its own FROM (sc) does not have and outer does, in the
// order they are written. Nested subqueries are not looked into.
// appendFree adds to cols the enclosing columns n reads.
func appendFree(cols []column, n ast.Node, sc, outer *scope) []column {
	v := &freeFinder{sc: sc, outer: outer, seen: map[int]bool{}, cols: cols}
	for _, c := range cols {
		v.seen[c.idx] = true
	}
	n.Accept(v)
	return v.cols
}

func freeColumns(sel *ast.SelectStmt, sc, outer *scope) []column {
	v := &freeFinder{sc: sc, outer: outer, seen: map[int]bool{}}
	if sel.Where != nil {
		sel.Where.Accept(v)
	}
	if sel.Fields != nil {
		for _, f := range sel.Fields.Fields {
			if f.Expr != nil {
				f.Expr.Accept(v)
			}
		}
	}
	return v.cols
}

type freeFinder struct {
	sc, outer *scope
	seen      map[int]bool
	cols      []column
}

func (v *freeFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch c := n.(type) {
	case *ast.SubqueryExpr:
		return n, true
	case *ast.ColumnNameExpr:
		table, name := c.Name.Table.O, c.Name.Name.O
		if len(v.sc.lookup(table, name)) > 0 {
			return n, true
		}
		if found := v.outer.lookup(table, name); len(found) == 1 {
			col := v.outer.cols[found[0]]
			if !v.seen[col.idx] {
				v.seen[col.idx] = true
				v.cols = append(v.cols, col)
			}
		}
		return n, true
	}
	return n, false
}

func (v *freeFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// bindCorrelatedFromWhere binds the FROM and WHERE of a correlated subquery
// (root is its bound FROM): the scope it returns has S's columns, then a
// marker column (TRUE on S's side of the join, NULL on the domain rows no row
// of S matched), then D's columns, named as the enclosing columns.
func (b *binder) bindCorrelatedFromWhere(sel *ast.SelectStmt, root *fromNode, corr *correlation) (Plan, *scope, error) {
	n, k := root.n, len(corr.cols)
	ext := &scope{cols: append([]column{}, root.scope.cols...), star: root.scope.star}
	ext.cols = append(ext.cols, column{name: "$matched", typ: types.BoolType, idx: n, hidden: true})
	dschema := make(types.Schema, k)
	for j, c := range corr.cols {
		ext.cols = append(ext.cols, column{table: c.table, name: c.name, typ: c.typ, idx: n + 1 + j, outer: true})
		dschema[j] = types.Field{Name: c.name, Type: c.typ}
	}
	ext.corr = corr
	corr.at = n + 1
	var domain Plan
	corr.domain = &Domain{Out: dschema}
	domain = corr.domain
	if len(b.laterals) > 0 {
		d, err := b.lateralDomain(ext, n+1, k, corr.domain)
		if err != nil {
			return nil, nil, err
		}
		domain = d
	}
	marker := expr.Column(n, types.BoolType, "$matched")
	// An aggregate over no rows still has a row: every D value must reach
	// it, through an outer join, and COUNT(*) counts S's side only.
	outerJoin := corr.kind == corrScalar || hasAggregate(sel) || sel.GroupBy != nil || sel.Having != nil
	corr.innerJoin = corr.kind == corrScalar && corr.nullRejected && nullOnEmpty(sel) && len(b.laterals) == 0
	if corr.innerJoin {
		outerJoin = false
		corr.est, _ = b.cat.(RowEstimator)
	}
	if corr.kind == corrLateral {
		// A LATERAL item's rows: one per D value for an aggregate without
		// GROUP BY, none for a D value without rows otherwise.
		outerJoin = (hasAggregate(sel) || sel.Having != nil) && sel.GroupBy == nil
	}
	if outerJoin {
		ext.countRows = marker
	}
	// late: the conjuncts of WHERE that read its own subqueries' columns,
	// which come after D's.
	var where, late []*expr.Expr
	subs := &subqueries{base: n + 1 + k}
	if sel.Where != nil {
		w, err := b.bindWhere(ext, sel.Where, subs)
		if err != nil {
			return nil, nil, err
		}
		if len(subs.joins) > 0 && len(b.laterals) > 0 {
			return nil, nil, b.errorf(ErrUnsupported, sel.Where, "subqueries inside the WHERE of a correlated subquery with a LATERAL item are not supported yet")
		}
		for _, c := range conjuncts(w) {
			if len(subs.joins) > 0 && readsFrom(c, n+1+k) {
				late = append(late, c)
			} else {
				where = append(where, c)
			}
		}
	}
	if len(b.laterals) > 0 {
		// JOIN ... ON or USING conditions on a lateral item's columns
		// (bind_lateral_arrays.go).
		where = append(where, b.lateralJoinConds(root, n+1+k)...)
	}
	conds, err := b.outerConds(corr, n+1)
	if err != nil {
		return nil, nil, err
	}
	where = append(where, conds...)
	from, err := b.buildFrom(root, &where, false)
	if err != nil {
		return nil, nil, err
	}
	if corr.kind == corrExists && !outerJoin && len(subs.joins) == 0 && len(b.laterals) == 0 && len(b.corrTables) == 0 {
		corr.exists = &existsForm{from: from, conds: slices.Clone(where), n: n}
	}
	if len(subs.joins) > 0 {
		p, err := b.correlatedWithSubqueries(from, where, late, subs, n, k, corr.domain, outerJoin, ext)
		return p, ext, err
	}
	// Not for an inner join's aggregate: D, the enclosing query's keys,
	// limits the rows it groups (TPC-H q17: the lineitems of a few parts).
	if !outerJoin && !corr.innerJoin && len(b.laterals) == 0 {
		if p, ok := b.withoutDomain(from, where, n, k); ok {
			return p, ext, nil
		}
	}
	// S's side, with its marker, joined to D on the rest of WHERE: an outer
	// join keeping every D row for an aggregate, an inner one otherwise.
	side := &fromNode{plan: appendColumns(from, []*expr.Expr{boolLit(true)}), off: 0, n: n + 1}
	side.scope = ext
	if len(b.laterals) > 0 {
		where = append(where, b.lateralCond)
	}
	dn := len(domain.Schema())
	dom := &fromNode{plan: domain, off: n + 1, n: dn, scope: ext}
	node := &fromNode{left: side, right: dom, off: 0, n: n + 1 + dn, conds: where, scope: ext}
	if outerJoin {
		node.kind = fromRight
	}
	var none []*expr.Expr
	p, err := b.buildFrom(node, &none, false)
	if err != nil {
		return nil, nil, err
	}
	if len(b.laterals) > 0 && outerJoin {
		p = nullUnmatchedSeries(p, marker, n+1+k)
	}
	return p, ext, nil
}

// nullOnEmpty reports whether sel, a subquery of one item that aggregates
// without GROUP BY, is NULL over no rows: its item is sum, avg, min or max,
// or an arithmetic operator or cast, NULL when an operand is, over one
// (0.2 * avg(l_quantity)). Not count(*): 0 over no rows.
func nullOnEmpty(sel *ast.SelectStmt) bool {
	if sel.GroupBy != nil || sel.Having != nil || sel.Limit != nil || sel.Fields == nil || len(sel.Fields.Fields) != 1 {
		return false
	}
	var null func(n ast.ExprNode) bool
	null = func(n ast.ExprNode) bool {
		switch e := n.(type) {
		case *ast.ParenthesesExpr:
			return null(e.Expr)
		case *ast.AggregateFuncExpr:
			switch strings.ToLower(e.F) {
			case "sum", "avg", "min", "max":
				return true
			}
		case *ast.BinaryOperationExpr:
			switch e.Op {
			case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Div:
				return null(e.L) || null(e.R)
			}
		case *ast.UnaryOperationExpr:
			return e.Op == opcode.Minus && null(e.V)
		case *ast.FuncCastExpr:
			return null(e.Expr)
		}
		return false
	}
	return null(sel.Fields.Fields[0].Expr)
}

// correlatedWithSubqueries is bindCorrelatedFromWhere's plan for a WHERE with
// subqueries of its own, which read S's columns and D's (a reference two
// levels out is one to D): S's FROM (from, n columns) joined to D on the
// conjuncts where, an inner join, the subqueries joined to that, and the
// conjuncts late that read them applied after. For an aggregate S, whose D
// values must all reach the aggregation, that result is outer-joined to D
// again, NULL-safely on D's k columns: the layout is S's columns, the marker,
// D's.
func (b *binder) correlatedWithSubqueries(from Plan, where, late []*expr.Expr, subs *subqueries, n, k int, domain *Domain, outerJoin bool, ext *scope) (Plan, error) {
	p, ok := Plan(nil), false
	if !outerJoin && !ext.corr.innerJoin {
		p, ok = b.withoutDomain(from, where, n, k)
	}
	if !ok {
		side := &fromNode{plan: appendColumns(from, []*expr.Expr{boolLit(true)}), off: 0, n: n + 1, scope: ext}
		dom := &fromNode{plan: domain, off: n + 1, n: k, scope: ext}
		node := &fromNode{left: side, right: dom, off: 0, n: n + 1 + k, conds: where, scope: ext}
		var none []*expr.Expr
		var err error
		if p, err = b.buildFrom(node, &none, false); err != nil {
			return nil, err
		}
	}
	p = applySubqueries(p, subs)
	if len(late) > 0 {
		p = &Filter{Input: p, Cond: and(late...)}
	}
	s := p.Schema()
	layout := make([]*expr.Expr, n+1+k)
	for i := range layout {
		layout[i] = expr.Column(i, s[i].Type, s[i].Name)
	}
	p = &Project{Input: p, Exprs: layout, Out: s[:n+1+k]}
	if !outerJoin {
		return p, nil
	}
	var dkeys, pkeys []*expr.Expr
	for j, f := range domain.Out {
		dkeys = append(dkeys, expr.Column(j, f.Type, f.Name))
		pkeys = append(pkeys, expr.Column(n+1+j, s[n+1+j].Type, s[n+1+j].Name))
	}
	j := leftJoin(domain, p, nullSafeKeys(dkeys), nullSafeKeys(pkeys))
	exprs := make([]*expr.Expr, n+1+k)
	out := make(types.Schema, n+1+k)
	for i := 0; i < n+1; i++ {
		exprs[i], out[i] = expr.Column(k+i, s[i].Type, s[i].Name), s[i]
	}
	for j, f := range domain.Out {
		exprs[n+1+j], out[n+1+j] = expr.Column(j, f.Type, f.Name), f
	}
	return &Project{Input: j, Exprs: exprs, Out: out}, nil
}

// topPerDomain applies a correlated subquery's ORDER BY keys and LIMIT to
// each domain value's rows of top (whose first n columns are its items, D's
// the last k of them): the rows numbered by ROW_NUMBER() OVER (PARTITION BY
// D ORDER BY keys) past the offset and within the count, a Top-N per key.
func (b *binder) topPerDomain(l *ast.Limit, top Plan, keys []SortKey, n int, corr *correlation) (Plan, error) {
	lim, err := b.bindLimit(l)
	if err != nil {
		return nil, err
	}
	if lim.CountParam > 0 || lim.OffsetParam > 0 {
		return nil, b.errorf(ErrUnsupported, l.Count, "a parameter as the LIMIT of a correlated subquery is not supported")
	}
	out := top.Schema()
	k := len(corr.cols)
	part := make([]int, k)
	for j := range part {
		part[j] = n - k + j
	}
	wout := append(append(types.Schema{}, out...), types.Field{Name: "row_number", Type: types.Int64Type})
	w := &Window{Input: top, Partition: part, Order: keys, Out: wout,
		Funcs: []WindowCall{{Func: "row_number", Default: -1, Frame: WindowFrame{StartUnbounded: true, EndUnbounded: true}, Type: types.Int64Type}}}
	rn := expr.Column(len(out), types.Int64Type, "row_number")
	var conds []*expr.Expr
	if lim.Offset > 0 {
		conds = append(conds, expr.Call(">", types.BoolType, rn, expr.Literal(types.IntValue(lim.Offset))))
	}
	if lim.Count >= 0 && lim.Count <= math.MaxInt64-lim.Offset {
		conds = append(conds, expr.Call("<=", types.BoolType, rn, expr.Literal(types.IntValue(lim.Offset+lim.Count))))
	}
	var p Plan = w
	if len(conds) > 0 {
		p = &Filter{Input: w, Cond: and(conds...)}
	}
	return &Project{Input: p, Exprs: columnsOf(out), Out: out}, nil
}

// readsFrom reports whether e reads a column at or past position from.
func readsFrom(e *expr.Expr, from int) bool {
	for _, c := range e.Columns(nil) {
		if c >= from {
			return true
		}
	}
	return false
}

// withoutDomain is S's side without the join to D, when it needs none: when
// each of D's k columns is equated, in WHERE, to an expression over S's own n
// columns (EXISTS (... WHERE l.k = o.k), as in most correlated EXISTS and
// IN). The rows of S whose expressions are not NULL are then exactly those
// the join to D would keep for the D values equal to them, so D's columns are
// those expressions, and the enclosing query's join on D (a NULL-safe one)
// finds its rows. This is Neumann and Kemper's "decoupling" of D through an
// equivalence: the enclosing input is not read a second time for D. Not for
// a subquery that aggregates: a D value no row matches must still get its
// aggregates (its outer join keeps it).
func (b *binder) withoutDomain(from Plan, where []*expr.Expr, n, k int) (Plan, bool) {
	defs := make([]*expr.Expr, n+1+k) // the columns of the layout, over from's
	fs := from.Schema()
	for i := 0; i < n; i++ {
		defs[i] = expr.Column(i, fs[i].Type, fs[i].Name)
	}
	defs[n] = boolLit(true)
	inner := func(e *expr.Expr) bool {
		for _, c := range e.Columns(nil) {
			if c >= n {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(where))
	for j := range k {
		d := n + 1 + j
		for i, c := range where {
			if used[i] || c.Kind != expr.KindCall || c.Func != "=" || len(c.Args) != 2 {
				continue
			}
			a, e := c.Args[0], c.Args[1]
			if e.Kind == expr.KindColumn && e.Col == d {
				a, e = e, a
			}
			if a.Kind == expr.KindColumn && a.Col == d && inner(e) && a.Type == e.Type {
				defs[d], used[i] = e, true
				break
			}
		}
		if defs[d] == nil {
			return nil, false
		}
	}
	var conds []*expr.Expr
	for i, c := range where {
		if !used[i] {
			conds = append(conds, substitute(c, defs))
		}
	}
	for j := range k {
		notNull := expr.Call("not", types.BoolType, expr.Call("is_null", types.BoolType, defs[n+1+j]))
		conds = append(conds, notNull)
	}
	out := make(types.Schema, len(defs))
	for i, e := range defs {
		out[i] = types.Field{Name: exprDisplayName(e), Type: e.Type}
	}
	return &Project{Input: &Filter{Input: from, Cond: and(conds...)}, Exprs: defs, Out: out}, true
}

// replacePlan returns p with node old replaced by with.
func replacePlan(p, old, with Plan) Plan {
	if p == old {
		return with
	}
	switch n := p.(type) {
	case *Filter:
		return &Filter{Input: replacePlan(n.Input, old, with), Cond: n.Cond}
	case *Project:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	case *Unnest:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	case *Aggregate:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	case *Join:
		c := *n
		c.Left, c.Right = replacePlan(n.Left, old, with), replacePlan(n.Right, old, with)
		return &c
	case *Union:
		c := *n
		c.Left, c.Right = replacePlan(n.Left, old, with), replacePlan(n.Right, old, with)
		return &c
	case *Sort:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	case *Limit:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	case *MaxOneRow:
		return &MaxOneRow{Input: replacePlan(n.Input, old, with)}
	case *Window:
		c := *n
		c.Input = replacePlan(n.Input, old, with)
		return &c
	}
	return p
}

// nullUnmatched makes the select items of a scalar subquery that does not
// aggregate NULL on the rows of D no row of S matched (the outer join keeps
// them, their marker NULL): a subquery of no rows is NULL, whatever its
// select list would make of NULL columns ((SELECT coalesce(s.x, 5) ...) over
// no rows).
func nullUnmatched(items []selectItem, corr *correlation) {
	marker := expr.Column(corr.at-1, types.BoolType, "$matched")
	matched := expr.Call("is_true", types.BoolType, marker)
	for i, it := range items {
		items[i].e = expr.Call("case", it.e.Type, matched, it.e, expr.Literal(types.NullValue(it.e.Type)))
	}
}
