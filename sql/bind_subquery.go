package sql

import (
	"errors"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Subqueries in expressions, decorrelated into joins rather than run once per
// row. Each subquery of a clause (WHERE, a select list without aggregates)
// becomes columns appended to the clause's input by a left join, and the
// expression reads them:
//
//	(SELECT v ...)         a nested-loop join with the subquery's rows, at most
//	                       one (MaxOneRow checks it): its value, NULL for none
//	EXISTS (SELECT ...)    a join with one row: count(*) > 0 of the subquery
//	                       limited to one row
//	x IN (SELECT y ...)    a hash join on x = y with the distinct ys, marking
//	                       the rows that match, and a join with one row of the
//	                       subquery's count(*) and count(y), for SQL's NULLs:
//	                       no match is NULL when x is NULL or a y is NULL
//	x op ANY|ALL (...)     a join with one row of count(*), count(y), min(y)
//	                       and max(y), from which the comparison follows
//
// A subquery that reads columns of the enclosing query (a correlated one) is
// computed once per distinct value of those columns: bind_correlated.go.

// subqueries collects the subqueries of one clause's expressions.
type subqueries struct {
	base  int // the clause's input width: the first subquery column
	joins []subqueryJoin
	added int // columns appended so far
	// post: the clause is computed after an aggregation (HAVING, the select
	// list of a GROUP BY), whose output the subqueries join; its columns
	// are numbered from postBase until the aggregation is built, and such a
	// subquery may not be correlated.
	post bool
}

// postBase numbers the columns of subqueries joined after an aggregation
// while the aggregation is not built yet (toAggSpace maps them).
const postBase = 1 << 30

// subqueryJoin appends right's columns to the input: a left join on
// outerKeys (over the input as it is before the join) = innerKeys (columns
// of right), or with every row of right when there are no keys.
type subqueryJoin struct {
	right     Plan
	outerKeys []*expr.Expr
	innerKeys []int
	// domain, for a correlated subquery, is filled in from the input when
	// joined; the keys then match NULLs too.
	domain *correlation
	// semi: the join was pushed down to a FROM item as a semi join
	// (bind_semijoin.go); every row left matched, so right's two columns,
	// its value and its mark, are the outer key and TRUE.
	semi bool
	// exists: an EXISTS conjunct as a semi or anti join (bind_semijoin.go);
	// right only gives its column's schema, TRUE on every row left.
	exists *existsJoin
}

// add registers a join and returns where right's first column lands.
func (s *subqueries) add(j subqueryJoin) int {
	pos := s.base + s.added
	s.joins = append(s.joins, j)
	s.added += len(j.right.Schema())
	return pos
}

// applySubqueries appends the subqueries' columns to input.
func applySubqueries(input Plan, s *subqueries) Plan {
	if s == nil {
		return input
	}
	for _, j := range s.joins {
		right := j.right
		rs := right.Schema()
		if j.exists != nil {
			input = joinExists(input, j.exists, rs)
			continue
		}
		if j.semi {
			in := input.Schema()
			exprs := make([]*expr.Expr, 0, len(in)+2)
			out := append(types.Schema{}, in...)
			for i, f := range in {
				exprs = append(exprs, expr.Column(i, f.Type, f.Name))
			}
			exprs = append(exprs, j.outerKeys[0], boolLit(true))
			input = &Project{Input: input, Exprs: exprs, Out: append(out, rs...)}
			continue
		}
		lkeys := j.outerKeys
		rkeys := make([]*expr.Expr, len(j.innerKeys))
		for i, c := range j.innerKeys {
			rkeys[i] = expr.Column(c, rs[c].Type, rs[c].Name)
		}
		if j.domain != nil {
			right = withDomain(right, input, j.domain)
			dl, dr := domainKeys(right, j.domain)
			lkeys = append(append([]*expr.Expr{}, lkeys...), nullSafeKeys(dl)...)
			rkeys = append(rkeys, nullSafeKeys(dr)...)
		}
		if j.domain != nil && j.domain.innerJoin {
			input = keyJoin(InnerJoin, input, right, lkeys, rkeys)
			continue
		}
		input = leftJoin(input, right, lkeys, rkeys)
	}
	return input
}

// leftJoin is left LEFT JOIN right ON lkeys = rkeys (expressions over each
// side), its output left's columns then right's.
func leftJoin(left, right Plan, lkeys, rkeys []*expr.Expr) Plan {
	return keyJoin(LeftJoin, left, right, lkeys, rkeys)
}

// keyJoin is left JOIN right ON lkeys = rkeys, an inner or left join, as
// leftJoin.
func keyJoin(kind JoinKind, left, right Plan, lkeys, rkeys []*expr.Expr) Plan {
	nl, nr := len(left.Schema()), len(right.Schema())
	lcols, lextra := keyColumns(lkeys, nl)
	rcols, rextra := keyColumns(rkeys, nr)
	physL, physR := left, right
	if len(lextra) > 0 {
		physL = appendColumns(left, lextra)
	}
	if len(rextra) > 0 {
		physR = appendColumns(right, rextra)
	}
	out := append(append(types.Schema{}, physL.Schema()...), physR.Schema()...)
	j := &Join{Left: physL, Right: physR, Kind: kind, LeftKeys: lcols, RightKeys: rcols, Out: out}
	if len(lextra) == 0 && len(rextra) == 0 {
		return j
	}
	// Drop the key columns computed for the join.
	var exprs []*expr.Expr
	var names types.Schema
	for i, f := range out {
		if i >= nl && i < nl+len(lextra) || i >= nl+len(lextra)+nr {
			continue
		}
		exprs = append(exprs, expr.Column(i, f.Type, f.Name))
		names = append(names, f)
	}
	return &Project{Input: j, Exprs: exprs, Out: names}
}

// bindSubquery binds a subquery's query with the enclosing query's scope
// known: a subquery used as kind (nil: one that may not be correlated) may
// read its columns (bind_correlated.go), and returns its correlation then;
// otherwise a reference to one is refused by name.
func (b *binder) bindSubquery(ctx *exprCtx, n ast.Node, q ast.ResultSetNode, kind *corrKind) (Plan, *correlation, error) {
	if ctx.subs == nil {
		return nil, nil, b.errorf(ErrUnsupported, n, "subqueries are not supported in %s", ctx.where())
	}
	b.outer = append(b.outer, ctx.scope)
	saved, savedSet := b.pendingCorr, b.setCorr
	defer func() { b.outer, b.pendingCorr, b.setCorr = b.outer[:len(b.outer)-1], saved, savedSet }()
	correlated := kind != nil && ctx.scope != nil && !(ctx.subs.post && ctx.inAgg)
	var corr *correlation
	var forced []column
	// again reports whether err is a nested subquery's reference to a column
	// of ctx's scope: this subquery is then correlated on it too, and is
	// bound again.
	again := func(err error) bool {
		var need *needOuter
		if correlated && errors.As(err, &need) && need.scope == ctx.scope && !hasColumn(forced, need.col) {
			forced = append(forced, need.col)
			return true
		}
		return false
	}
	switch q := q.(type) {
	case *ast.SelectStmt:
		for {
			if correlated {
				corr = &correlation{outer: ctx.scope, kind: *kind, forced: forced,
					nullRejected: ctx.strictSub != nil && n == ast.Node(ctx.strictSub)}
				b.pendingCorr = corr
			}
			p, err := b.bindQuery(q)
			if again(err) {
				continue
			}
			if err != nil || corr == nil || len(corr.cols) == 0 {
				return p, nil, err
			}
			return p, corr, nil
		}
	case *ast.SetOprStmt:
		if !correlated {
			p, err := b.bindSetOpr(q)
			return p, nil, err
		}
		for {
			sc := &setCorrelation{outer: ctx.scope, kind: *kind, forced: forced}
			b.setCorr = sc
			p, err := b.bindSetOpr(q)
			if again(err) {
				continue
			}
			var retry *setRetry
			if errors.As(err, &retry) && len(forced) < len(retry.cols) {
				// Some SELECT does not read them all: each is bound again
				// correlated on every one, in one order.
				forced = retry.cols
				continue
			}
			if retry != nil {
				return nil, nil, b.errorf(ErrUnsupported, n, "this correlated set operation is not supported")
			}
			if err != nil {
				return nil, nil, err
			}
			corr, ok := sc.combined()
			if !ok {
				return nil, nil, b.errorf(ErrUnsupported, n, "this correlated set operation is not supported")
			}
			if len(corr.cols) == 0 {
				return p, nil, nil
			}
			return p, corr, nil
		}
	}
	return nil, nil, b.errorf(ErrUnsupported, n, "this subquery is not supported")
}

var (
	asScalar  = corrScalar
	asExists  = corrExists
	asIn      = corrIn
	asLateral = corrLateral
)

// subqueryOf unwraps the subquery of an EXISTS or IN.
func subqueryOf(n ast.ExprNode) (*ast.SubqueryExpr, bool) {
	for {
		switch e := n.(type) {
		case *ast.SubqueryExpr:
			return e, true
		case *ast.ParenthesesExpr:
			n = e.Expr
		default:
			return nil, false
		}
	}
}

// bindScalarSubquery binds (SELECT v ...) in an expression.
func (b *binder) bindScalarSubquery(ctx *exprCtx, n *ast.SubqueryExpr) (*expr.Expr, error) {
	p, corr, err := b.bindSubquery(ctx, n, n.Query, &asScalar)
	if err != nil {
		return nil, err
	}
	s := p.Schema()
	if corr != nil {
		// Its value per domain value, then the domain's columns.
		if len(s) != 1+len(corr.cols) {
			return nil, b.errorf(ErrSyntax, n, "subquery must return only one column")
		}
		if !corr.aggregated {
			if p, err = b.singleRowPerDomain(n, p, corr); err != nil {
				return nil, err
			}
		}
		pos := ctx.subs.add(domainJoin(p, corr))
		return expr.Column(pos, s[0].Type, s[0].Name), nil
	}
	if len(s) != 1 {
		return nil, b.errorf(ErrSyntax, n, "subquery must return only one column")
	}
	if !oneRow(p) {
		p = &MaxOneRow{Input: p}
	}
	pos := ctx.subs.add(subqueryJoin{right: p})
	return expr.Column(pos, s[0].Type, s[0].Name), nil
}

// singleRowPerDomain makes a correlated scalar subquery that does not
// aggregate (its rows [v, D...]) yield one row per D value, failing the query
// (21000) where it has more: the count and maximum of v grouped by D, then
// $single_row(count, max).
func (b *binder) singleRowPerDomain(n ast.Node, p Plan, corr *correlation) (Plan, error) {
	s := p.Schema()
	k := len(corr.cols)
	v := s[0]
	if _, _, ok := aggSignature("max", v.Type); !ok {
		return nil, b.errorf(ErrUnsupported, n, "a correlated scalar subquery of type %s must aggregate (SELECT max(...) ...) for now", v.Type)
	}
	groupBy := make([]int, k)
	out := make(types.Schema, 0, k+2)
	for i := range k {
		groupBy[i] = 1 + i
		out = append(out, s[1+i])
	}
	out = append(out, types.Field{Name: "n", Type: types.Int64Type}, v)
	agg := &Aggregate{Input: p, GroupBy: groupBy, Out: out,
		Aggs: []AggCall{{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "max", Arg: 0, Type: v.Type}}}
	one, err := b.call(n, "$single_row", expr.Column(k, types.Int64Type, "n"), expr.Column(k+1, v.Type, v.Name))
	if err != nil {
		return nil, err
	}
	exprs := []*expr.Expr{one}
	names := types.Schema{v}
	for i := range k {
		exprs = append(exprs, expr.Column(i, out[i].Type, out[i].Name))
		names = append(names, out[i])
	}
	return &Project{Input: agg, Exprs: exprs, Out: names}, nil
}

// oneRow reports whether p yields exactly one row: an aggregate without
// GROUP BY, under projections.
func oneRow(p Plan) bool {
	for {
		switch n := p.(type) {
		case *Project:
			p = n.Input
		case *Aggregate:
			return len(n.GroupBy) == 0
		default:
			return false
		}
	}
}

// bindExists binds [NOT] EXISTS (subquery).
func (b *binder) bindExists(ctx *exprCtx, n *ast.ExistsSubqueryExpr) (*expr.Expr, error) {
	sq, ok := subqueryOf(n.Sel)
	if !ok {
		return nil, b.errorf(ErrUnsupported, n, "EXISTS takes a subquery")
	}
	p, corr, err := b.bindSubquery(ctx, n, sq.Query, &asExists)
	if err != nil {
		return nil, err
	}
	if corr != nil {
		if j, ok := b.existsJoinOf(ctx, n, sq.Query, corr, n.Not); ok {
			ctx.subs.add(j)
			return boolLit(true), nil
		}
		// The domain values some row matched, marked.
		s := p.Schema()
		k := len(corr.cols)
		exprs := make([]*expr.Expr, k)
		dom := make(types.Schema, k)
		for i := range k {
			f := s[len(s)-k+i]
			exprs[i], dom[i] = expr.Column(len(s)-k+i, f.Type, f.Name), f
		}
		matched := &Aggregate{Input: &Project{Input: p, Exprs: exprs, Out: dom}, GroupBy: identity(k), Out: dom}
		mexprs := []*expr.Expr{boolLit(true)}
		mout := types.Schema{{Name: "exists", Type: types.BoolType}}
		for i, f := range dom {
			mexprs = append(mexprs, expr.Column(i, f.Type, f.Name))
			mout = append(mout, f)
		}
		pos := ctx.subs.add(domainJoin(&Project{Input: matched, Exprs: mexprs, Out: mout}, corr))
		e, err := b.call(n, "coalesce", expr.Column(pos, types.BoolType, "exists"), boolLit(false))
		if err != nil || !n.Not {
			return e, err
		}
		return b.call(n, "not", e)
	}
	count := &Aggregate{Input: &Limit{Input: p, Count: 1}, Out: types.Schema{{Name: "count", Type: types.Int64Type}},
		Aggs: []AggCall{{Func: "count", Arg: -1, Type: types.Int64Type}}}
	some, err := b.call(n, ">", expr.Column(0, types.Int64Type, "count"), expr.Literal(types.IntValue(0)))
	if err != nil {
		return nil, err
	}
	right := &Project{Input: count, Exprs: []*expr.Expr{some}, Out: types.Schema{{Name: "exists", Type: types.BoolType}}}
	pos := ctx.subs.add(subqueryJoin{right: right})
	e := expr.Column(pos, types.BoolType, "exists")
	if n.Not {
		return b.call(n, "not", e)
	}
	return e, nil
}

// bindInSubquery binds x [NOT] IN (subquery).
func (b *binder) bindInSubquery(ctx *exprCtx, n *ast.PatternInExpr) (*expr.Expr, error) {
	sq, ok := subqueryOf(n.Sel)
	if !ok {
		return nil, b.errorf(ErrUnsupported, n, "IN takes a list or a subquery")
	}
	x, y, dom, p, corr, err := b.bindQuantified(ctx, n, n.Expr, sq)
	if err != nil {
		return nil, err
	}
	// The distinct values (per domain value), each with a mark: a row that
	// finds its value reads the mark TRUE, one that does not NULL.
	vals := projectOf(p, append([]*expr.Expr{y}, dom...), "y")
	distinct := &Aggregate{Input: vals, GroupBy: identity(1 + len(dom)), Out: vals.Out}
	mexprs := []*expr.Expr{expr.Column(0, y.Type, "y"), boolLit(true)}
	mout := types.Schema{{Name: "y", Type: y.Type}, {Name: "found", Type: types.BoolType}}
	for i, d := range dom {
		mexprs = append(mexprs, expr.Column(1+i, d.Type, d.Name))
		mout = append(mout, types.Field{Name: d.Name, Type: d.Type})
	}
	marked := &Project{Input: distinct, Exprs: mexprs, Out: mout}
	at := ctx.subs.add(subqueryJoin{right: marked, outerKeys: []*expr.Expr{x}, innerKeys: []int{0}, domain: corr})
	found := expr.Column(at+1, types.BoolType, "found")
	if !n.Not && ctx.conjuncts[n] {
		// A conjunct of WHERE keeps only the rows for which it is true:
		// whether it is false or NULL need not be told apart, nor the
		// subquery's rows counted for it.
		return b.call(n, "coalesce", found, boolLit(false))
	}
	stats, err := b.subqueryStats(n, p, y, dom, corr, ctx.subs)
	if err != nil {
		return nil, err
	}
	// CASE WHEN found THEN true WHEN n = 0 THEN false
	//      WHEN x IS NULL OR nn < n THEN NULL ELSE false END
	xNull, err := b.call(n, "is_null", x)
	if err != nil {
		return nil, err
	}
	someNull, err := b.call(n, "<", stats.nn, stats.n)
	if err != nil {
		return nil, err
	}
	unknown, err := b.call(n, "or", xNull, someNull)
	if err != nil {
		return nil, err
	}
	e, err := b.call(n, "case", found, boolLit(true), stats.empty, boolLit(false), unknown, expr.Literal(types.NullValue(types.BoolType)), boolLit(false))
	if err != nil || !n.Not {
		return e, err
	}
	return b.call(n, "not", e)
}

func boolLit(v bool) *expr.Expr { return expr.Literal(types.BoolValue(v)) }

// bindQuantified binds the operand left and the subquery sq of x IN (...) or
// x op ANY|ALL (...): x and the subquery's column y at their common type,
// the subquery's domain columns when it is correlated, its plan and
// correlation.
func (b *binder) bindQuantified(ctx *exprCtx, n ast.Node, left ast.ExprNode, sq *ast.SubqueryExpr) (x, y *expr.Expr, dom []*expr.Expr, p Plan, corr *correlation, err error) {
	if x, err = b.bindExpr(ctx, left); err != nil {
		return
	}
	if p, corr, err = b.bindSubquery(ctx, n, sq.Query, &asIn); err != nil {
		return
	}
	x, y, dom, err = b.subqueryOperand(n, x, p, corr)
	return
}

// subqueryOperand checks that p has one column (then its domain's, when
// correlated) and returns x and that column (over p), both cast to their
// common type, and the domain's columns (over p).
func (b *binder) subqueryOperand(n ast.Node, x *expr.Expr, p Plan, corr *correlation) (*expr.Expr, *expr.Expr, []*expr.Expr, error) {
	s := p.Schema()
	k := 0
	if corr != nil {
		k = len(corr.cols)
	}
	if len(s) != 1+k {
		return nil, nil, nil, b.errorf(ErrSyntax, n, "subquery has too many columns")
	}
	var dom []*expr.Expr
	for i := 1; i < len(s); i++ {
		dom = append(dom, expr.Column(i, s[i].Type, s[i].Name))
	}
	y := expr.Column(0, s[0].Type, s[0].Name)
	args, err := b.adaptLiterals(n, []*expr.Expr{x, y})
	if err != nil {
		return nil, nil, nil, err
	}
	x, y = args[0], args[1]
	t, ok := expr.Coerce(x.Type, y.Type)
	if !ok {
		return nil, nil, nil, b.errorf(ErrType, n, "operator does not exist: %s = %s", x.Type, y.Type)
	}
	if t.ID == types.Null {
		t = types.StringType
	}
	if x.Type != t {
		x = expr.Cast(x, t)
	}
	if y.Type != t {
		y = expr.Cast(y, t)
	}
	return x, y, dom, nil
}

// projectOf projects p to exprs, the first named first.
func projectOf(p Plan, exprs []*expr.Expr, first string) *Project {
	out := make(types.Schema, len(exprs))
	for i, e := range exprs {
		name := first
		if i > 0 {
			name = e.Name
			if name == "" {
				name = "?column?"
			}
		}
		out[i] = types.Field{Name: name, Type: e.Type}
	}
	return &Project{Input: p, Exprs: exprs, Out: out}
}

// subqueryStats are the columns of a subquery's one-row summary.
type subqueryStatCols struct {
	n, nn, min, max *expr.Expr // count(*), count(y), min(y), max(y)
	empty           *expr.Expr // n = 0
}

// subqueryStats joins a row of count(*), count(y), min(y) and max(y) of the
// subquery p (y over p) to the clause's input: one, or one per domain value
// (dom over p) of a correlated subquery, a value without rows reading counts
// of 0.
func (b *binder) subqueryStats(n ast.Node, p Plan, y *expr.Expr, dom []*expr.Expr, corr *correlation, subs *subqueries) (subqueryStatCols, error) {
	k := len(dom)
	vals := projectOf(p, append([]*expr.Expr{y}, dom...), "y")
	aggOut := types.Schema{}
	for i := range dom {
		aggOut = append(aggOut, vals.Out[1+i])
	}
	aggOut = append(aggOut, types.Field{Name: "n", Type: types.Int64Type}, types.Field{Name: "nn", Type: types.Int64Type},
		types.Field{Name: "min", Type: y.Type}, types.Field{Name: "max", Type: y.Type})
	groupBy := make([]int, k)
	for i := range groupBy {
		groupBy[i] = 1 + i
	}
	var right Plan = &Aggregate{Input: vals, GroupBy: groupBy, Out: aggOut,
		Aggs: []AggCall{{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "count", Arg: 0, Type: types.Int64Type},
			{Func: "min", Arg: 0, Type: y.Type}, {Func: "max", Arg: 0, Type: y.Type}}}
	if k > 0 {
		// The counts first, the domain last, for the domain join.
		var exprs []*expr.Expr
		var out types.Schema
		for i := k; i < k+4; i++ {
			exprs, out = append(exprs, expr.Column(i, aggOut[i].Type, aggOut[i].Name)), append(out, aggOut[i])
		}
		for i := range k {
			exprs, out = append(exprs, expr.Column(i, aggOut[i].Type, aggOut[i].Name)), append(out, aggOut[i])
		}
		right = &Project{Input: right, Exprs: exprs, Out: out}
	}
	at := subs.add(subqueryJoin{right: right, domain: corr})
	c := subqueryStatCols{
		n:   expr.Column(at, types.Int64Type, "n"),
		nn:  expr.Column(at+1, types.Int64Type, "nn"),
		min: expr.Column(at+2, y.Type, "min"),
		max: expr.Column(at+3, y.Type, "max"),
	}
	var err error
	if k > 0 {
		zero := expr.Literal(types.IntValue(0))
		if c.n, err = b.call(n, "coalesce", c.n, zero); err != nil {
			return c, err
		}
		if c.nn, err = b.call(n, "coalesce", c.nn, zero); err != nil {
			return c, err
		}
	}
	c.empty, err = b.call(n, "=", c.n, expr.Literal(types.IntValue(0)))
	return c, err
}

// quantified are the comparisons of x op ANY|ALL (subquery), reduced to the
// subquery's minimum or maximum: for each op, the bound that decides ANY,
// then ALL's.
var quantified = map[opcode.Op][2]string{
	opcode.LT: {"max", "min"}, opcode.LE: {"max", "min"},
	opcode.GT: {"min", "max"}, opcode.GE: {"min", "max"},
}

// bindCompareSubquery binds x op ANY|SOME|ALL (subquery).
func (b *binder) bindCompareSubquery(ctx *exprCtx, n *ast.CompareSubqueryExpr) (*expr.Expr, error) {
	fn, ok := binaryOps[n.Op]
	if !ok || !isComparison(fn) {
		return nil, b.errorf(ErrUnsupported, n, "operator %s with ANY or ALL is not supported", n.Op)
	}
	sq, ok := subqueryOf(n.R)
	if !ok {
		return nil, b.errorf(ErrUnsupported, n, "ANY and ALL take a subquery")
	}
	if fn == "=" && !n.All || fn == "<>" && n.All {
		// = ANY is IN; <> ALL is NOT IN.
		return b.bindInSubquery(ctx, &ast.PatternInExpr{Expr: n.L, Sel: sq, Not: n.All})
	}
	x, y, dom, p, corr, err := b.bindQuantified(ctx, n, n.L, sq)
	if err != nil {
		return nil, err
	}
	st, err := b.subqueryStats(n, p, y, dom, corr, ctx.subs)
	if err != nil {
		return nil, err
	}
	// decided: the comparison some (ANY) or every (ALL) value satisfies,
	// judged on the non-NULL values; then NULLs among them, or a NULL x,
	// leave it unknown.
	var decided *expr.Expr
	switch {
	case fn == "=": // = ALL: every value is x
		lo, err := b.call(n, "<>", st.min, x)
		if err != nil {
			return nil, err
		}
		hi, err := b.call(n, "<>", st.max, x)
		if err != nil {
			return nil, err
		}
		if decided, err = b.call(n, "or", lo, hi); err != nil { // some value differs: false
			return nil, err
		}
	case fn == "<>": // <> ANY: some value differs from x
		lo, err := b.call(n, "<>", st.min, x)
		if err != nil {
			return nil, err
		}
		hi, err := b.call(n, "<>", st.max, x)
		if err != nil {
			return nil, err
		}
		if decided, err = b.call(n, "or", lo, hi); err != nil {
			return nil, err
		}
	default:
		bound := st.max
		k := 0
		if n.All {
			k = 1
		}
		if quantified[n.Op][k] == "min" {
			bound = st.min
		}
		cmp, err := b.call(n, fn, x, bound)
		if err != nil {
			return nil, err
		}
		decided = cmp
		if n.All {
			if decided, err = b.call(n, "not", cmp); err != nil { // a value fails: false
				return nil, err
			}
		}
	}
	xNull, err := b.call(n, "is_null", x)
	if err != nil {
		return nil, err
	}
	someValue, err := b.call(n, ">", st.nn, expr.Literal(types.IntValue(0)))
	if err != nil {
		return nil, err
	}
	decides, err := b.call(n, "and", someValue, decided)
	if err != nil {
		return nil, err
	}
	someNull, err := b.call(n, "<", st.nn, st.n)
	if err != nil {
		return nil, err
	}
	// ANY: empty false; decided true; NULLs unknown; else false.
	// ALL: empty true; decided false; NULLs unknown; else true.
	onEmpty, onDecided, otherwise := false, true, false
	if n.All {
		onEmpty, onDecided, otherwise = true, false, true
	}
	null := expr.Literal(types.NullValue(types.BoolType))
	return b.call(n, "case", st.empty, boolLit(onEmpty), xNull, null, decides, boolLit(onDecided), someNull, null, boolLit(otherwise))
}
