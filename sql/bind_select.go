package sql

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// selectItem is one output column of a SELECT being bound.
type selectItem struct {
	name string
	// e is the item over the FROM scope (with aggregate markers until the
	// aggregation is built); for a set-returning item, the string it splits.
	e   *expr.Expr
	srf *srfCall
}

// srfCall is a set-returning select item: Unnest's Func and Sep; for
// generate_series, extra are its hi and step over the FROM scope, and for
// the unnest of an array (a series of its positions), array is the array.
type srfCall struct {
	fn, sep string
	extra   []*expr.Expr
	array   *expr.Expr
	// elem, for an array's, is the item's value at a position of the array
	// (nil: the element there, unnest's); bind_pgjdbc.go.
	elem func(array, pos *expr.Expr) *expr.Expr
	// subscripts: generate_subscripts(array, 1), the positions themselves
	// (bind_srf_arrays.go); intElems: the array's elements are integers.
	subscripts, intElems, zeroBased bool
}

// bindQuery binds a SELECT into a plan, in PostgreSQL's order of evaluation:
// FROM, WHERE, GROUP BY and aggregates, HAVING, the select list (with at most one
// set-returning function, applied by an Unnest node), DISTINCT, ORDER BY, LIMIT.
//
// With aggregates the shape is Project (group keys and aggregate arguments) ->
// Aggregate -> Filter (HAVING) -> Project (select list). ORDER BY expressions that
// are not output columns are computed as hidden columns after the select list and
// dropped by a final Project.
func (b *binder) bindQuery(sel *ast.SelectStmt) (Plan, error) {
	if err := b.checkSelect(sel); err != nil {
		return nil, err
	}
	if sel.With != nil {
		if err := b.checkWith(sel.With); err != nil {
			return nil, err
		}
		defer b.pushWith(sel.With)()
	}
	input, sc, err := b.bindFromWhere(sel)
	if err != nil {
		return nil, err
	}
	ctx := &exprCtx{scope: sc, clause: "SELECT", wins: &winState{named: sel.WindowSpecs}}
	hasAgg := sel.GroupBy != nil || sel.Having != nil || hasAggregate(sel)
	if hasAgg {
		ctx.aggs = &aggState{}
		// Subqueries of the select list and HAVING join the aggregation's
		// output: their columns are numbered from postBase until it is built.
		ctx.subs = &subqueries{base: postBase, post: true}
		ctx.preSubs = &subqueries{base: len(input.Schema())}
	} else {
		// Subqueries of the select list add their columns after the input's.
		ctx.subs = &subqueries{base: len(input.Schema())}
	}
	items, err := b.bindSelectList(ctx, sel.Fields.Fields)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if it.srf != nil && it.srf.fn == "generate_series" && (hasAgg || sel.GroupBy != nil || len(ctx.wins.calls) > 0) {
			return nil, b.errorf(ErrUnsupported, sel.Fields.Fields[0], "generate_series in a select list with aggregates or window functions is not supported")
		}
	}
	if !hasAgg {
		input = applySubqueries(input, ctx.subs)
	}
	// DISTINCT ON, through the dialect layer: a row number per group, its
	// first row kept (below), not an output column.
	var distinctOn *expr.Expr
	if n := len(items); n > 0 && items[n-1].name == distinctOnItem {
		distinctOn, items = items[n-1].e, items[:n-1]
	}
	var groups []*expr.Expr
	var sets [][]int // grouping sets, nil for a plain GROUP BY
	if sel.GroupBy != nil {
		var itemGroup []int
		if groups, itemGroup, err = b.bindGroupBy(sc, sel.GroupBy, items); err != nil {
			return nil, err
		}
		sets = b.groupingSetsOf(sel.GroupBy, itemGroup)
	}
	if corr := sc.corr; corr != nil {
		// A correlated subquery carries its domain along, grouped by it.
		if sets != nil {
			return nil, b.errorf(ErrUnsupported, sel.GroupBy.Items[0].Expr, "grouping sets in a correlated subquery are not supported")
		}
		corr.aggregated = hasAgg
		if corr.kind == corrScalar && !hasAgg {
			nullUnmatched(items, corr) // bind_correlated.go
		}
		for _, it := range domainItems(corr) {
			items = append(items, it)
			if hasAgg {
				groups = append(groups, it.e)
			}
		}
	}
	var having *expr.Expr
	if sel.Having != nil {
		h, err := b.bindExpr(&exprCtx{scope: sc, clause: "HAVING", aggs: ctx.aggs, subs: ctx.subs, preSubs: ctx.preSubs}, sel.Having.Expr)
		if err != nil {
			return nil, err
		}
		if having, err = b.boolean(h, "HAVING", sel.Having.Expr); err != nil {
			return nil, err
		}
	}
	var keys []SortKey
	var hidden []*expr.Expr
	var hiddenAt ast.Node // the first ORDER BY item computed as a hidden column
	if sel.OrderBy != nil {
		octx := &exprCtx{scope: sc, clause: "ORDER BY", aggs: ctx.aggs, wins: ctx.wins}
		if keys, hidden, hiddenAt, err = b.bindOrderBy(octx, sel.OrderBy, items); err != nil {
			return nil, err
		}
	}
	if hasAgg {
		post := make([]*expr.Expr, 0, len(items)+len(hidden)+1)
		for _, it := range items {
			post = append(post, it.e)
		}
		post = append(post, hidden...)
		if having != nil {
			post = append(post, having)
		}
		build := b.buildAggregate
		if sets != nil || ctx.aggs.hasGrouping() {
			build = func(input Plan, groups []*expr.Expr, aggs *aggState, post []*expr.Expr) (Plan, []*expr.Expr, error) {
				return b.buildGroupingSets(input, groups, sets, aggs, post)
			}
		}
		input = applySubqueries(input, ctx.preSubs)
		agg, conv, err := build(input, groups, ctx.aggs, post)
		if err != nil {
			return nil, err
		}
		input = agg
		if subs := ctx.subs; len(subs.joins) > 0 {
			out := agg.Schema()
			for i := range subs.joins {
				for k, e := range subs.joins[i].outerKeys {
					if subs.joins[i].outerKeys[k], err = b.toAggSpace(e, groups, out); err != nil {
						return nil, err
					}
				}
			}
			subs.base = len(out)
			if err := b.postDomains(subs, groups, out); err != nil {
				return nil, err
			}
			input = applySubqueries(agg, subs)
		}
		for i := range items {
			items[i].e = conv[i]
		}
		copy(hidden, conv[len(items):])
		if having != nil {
			input = &Filter{Input: input, Cond: conv[len(conv)-1]}
		}
		// The window calls' expressions read the aggregation's output too.
		for _, c := range ctx.wins.calls {
			for _, list := range [][]*expr.Expr{c.args, c.partition} {
				for i, e := range list {
					if list[i], err = b.toAggSpace(e, groups, agg.Schema()); err != nil {
						return nil, err
					}
				}
			}
			for i, o := range c.order {
				if c.order[i].e, err = b.toAggSpace(o.e, groups, agg.Schema()); err != nil {
					return nil, err
				}
			}
			for _, e := range []**expr.Expr{&c.dflt, &c.rangeKey, &c.startBound, &c.endBound} {
				if *e != nil {
					if *e, err = b.toAggSpace(*e, groups, agg.Schema()); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if len(ctx.wins.calls) > 0 {
		var at []int
		input, at = applyWindows(input, ctx.wins)
		for i := range items {
			items[i].e = windowRefs(items[i].e, at)
		}
		for i := range hidden {
			hidden[i] = windowRefs(hidden[i], at)
		}
		if distinctOn != nil {
			first, err := b.call(nil, "=", windowRefs(distinctOn, at), expr.Literal(types.IntValue(1)))
			if err != nil {
				return nil, err
			}
			input = &Filter{Input: input, Cond: first}
		}
	}
	if sel.Distinct && hiddenAt != nil { // a hidden interval key (intervalSortKey) is one of a listed column
		return nil, b.errorf(ErrInvalidColumnReference, hiddenAt, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
	}
	return b.buildOutput(sel, input, items, hidden, keys, sc.corr)
}

// checkSelect refuses the SELECT features the engine does not have.
func (b *binder) checkSelect(sel *ast.SelectStmt) error {
	switch {
	case sel.Kind != ast.SelectStmtKindSelect:
		return b.errorf(ErrUnsupported, nil, "%s statements are not supported", sel.Kind.String())
	case sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone:
		return b.errorf(ErrUnsupported, nil, "locking clauses are not supported")
	case sel.SelectIntoOpt != nil:
		return b.errorf(ErrUnsupported, nil, "SELECT INTO is not supported")
	}
	return nil
}

func (b *binder) bindSelectList(ctx *exprCtx, fields []*ast.SelectField) ([]selectItem, error) {
	var items []selectItem
	sc := ctx.scope
	starPos := 0
	colItem := func(i int) {
		c := sc.cols[i]
		e := expr.Column(c.idx, c.typ, c.name)
		b.refs[e] = colRef{pos: starPos, name: c.qualified()}
		items = append(items, selectItem{name: c.name, e: e})
	}
	nsrf := 0
	for _, f := range fields {
		if wc := f.WildCard; wc != nil {
			starPos = 0
			if f.Offset > 0 && f.Offset < len(b.query) {
				starPos = charPos(b.query, f.Offset)
			}
			table := wc.Table.O
			if table == "" {
				if len(sc.cols) == 0 {
					return nil, b.errorf(ErrSyntax, nil, "SELECT * with no tables specified is not valid")
				}
				for _, i := range sc.star {
					colItem(i)
				}
				continue
			}
			if !sc.hasTable(table) {
				return nil, Errorf(ErrUnknownTable, b.identPos(wc.Table.O), "missing FROM-clause entry for table \"%s\"", table)
			}
			for i, c := range sc.cols {
				if c.table == table {
					colItem(i)
				}
			}
			continue
		}
		srf, arg, err := b.bindSRF(ctx, f.Expr)
		if err != nil {
			return nil, err
		}
		name := b.aliasName(f.AsName.O)
		if srf != nil {
			if nsrf++; nsrf > 1 && !arraySeries(items, srf) {
				return nil, b.errorf(ErrUnsupported, f.Expr, "only one set-returning function per select list is supported")
			}
			if name == "" {
				name = srfName(f.Expr)
			}
			items = append(items, selectItem{name: name, e: arg, srf: srf})
			continue
		}
		e, err := b.bindExpr(ctx, f.Expr)
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = b.exprName(f.Expr)
		}
		items = append(items, selectItem{name: name, e: e})
	}
	return items, nil
}

func srfName(n ast.ExprNode) string {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	return n.(*ast.FuncCallExpr).FnName.L
}

// bindSRF recognises a set-returning select item: unnest(string_split(s, sep)),
// string_to_table(s, sep) (the same split) or regexp_split_to_table(s, pattern).
// It returns nil for any other expression. The separator must be a constant
// string; the pattern must compile as a regular expression.
func (b *binder) bindSRF(ctx *exprCtx, n ast.ExprNode) (*srfCall, *expr.Expr, error) {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	f, ok := n.(*ast.FuncCallExpr)
	if ok {
		if call, e, ok, err := b.bindExpandArray(ctx, f); ok { // bind_pgjdbc.go
			return call, e, err
		}
	}
	if !ok || !srfNames[f.FnName.L] || f.FnName.L == "string_split" {
		return nil, nil, nil
	}
	if f.FnName.L == "generate_series" {
		return b.bindGenerateSeries(ctx, f)
	}
	if f.FnName.L == "generate_subscripts" {
		return b.bindGenerateSubscripts(ctx, f) // bind_srf_arrays.go
	}
	call := &srfCall{fn: "string_split"}
	args := f.Args
	switch f.FnName.L {
	case "unnest":
		var inner *ast.FuncCallExpr
		if len(args) == 1 {
			inner, _ = args[0].(*ast.FuncCallExpr)
		}
		if len(args) == 1 && (inner == nil || inner.FnName.L != "string_split") {
			return b.bindUnnestArray(ctx, f)
		}
		if inner == nil {
			return nil, nil, b.errorf(ErrUnsupported, f, "unnest takes one array, or string_split(s, separator)")
		}
		f, args = inner, inner.Args
	case "regexp_split_to_table":
		call.fn = "regexp_split_to_table"
	}
	if len(args) != 2 {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function %s takes 2 arguments", f.FnName.L)
	}
	s, err := b.bindExpr(ctx, args[0])
	if err != nil {
		return nil, nil, err
	}
	sep, err := b.bindExpr(ctx, args[1])
	if err != nil {
		return nil, nil, err
	}
	if !accepts(types.StringType, s.Type) || !accepts(types.StringType, sep.Type) {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function %s(%s, %s) does not exist", f.FnName.L, s.Type, sep.Type)
	}
	if !constant(sep) {
		return nil, nil, b.errorf(ErrInvalidValue, args[1], "the separator of %s must be a constant string", f.FnName.L)
	}
	v, err := expr.EvalConst(expr.Cast(sep, types.StringType))
	if err != nil || v.Null {
		return nil, nil, b.errorf(ErrInvalidValue, args[1], "the separator of %s must be a constant string, not NULL", f.FnName.L)
	}
	call.sep = v.Str
	if call.fn == "regexp_split_to_table" {
		if _, err := regexp.Compile(call.sep); err != nil {
			return nil, nil, b.errorf(ErrInvalidValue, args[1], "invalid regular expression: %v", err)
		}
	}
	return call, expr.Cast(s, types.StringType), nil
}

// bindGenerateSeries binds generate_series(lo, hi[, step]) over bigints, a
// select item: the item is lo, and the Unnest of buildOutput makes the
// series.
func (b *binder) bindGenerateSeries(ctx *exprCtx, f *ast.FuncCallExpr) (*srfCall, *expr.Expr, error) {
	if len(f.Args) != 2 && len(f.Args) != 3 {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function generate_series takes 2 or 3 arguments")
	}
	args := make([]*expr.Expr, 3)
	args[2] = expr.Literal(types.IntValue(1))
	for i, a := range f.Args {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, nil, err
		}
		args[i] = e
	}
	// A series of timestamps, step in microseconds: the windows of a hopping
	// window table function (dialect_window.go).
	if len(f.Args) == 3 && args[0].Type.ID == types.Timestamp && args[1].Type.ID == types.Timestamp && args[2].Type.ID == types.Int64 {
		return &srfCall{fn: "generate_series", extra: args[1:]}, args[0], nil
	}
	for i, e := range args {
		if e.Type.ID != types.Int64 && e.Type.ID != types.Null {
			return nil, nil, b.errorf(ErrUnknownFunction, f, "function generate_series(%s) is not supported: its arguments must be integers", e.Type)
		}
		args[i] = expr.Cast(e, types.Int64Type)
	}
	return &srfCall{fn: "generate_series", extra: args[1:]}, args[0], nil
}

// bindUnnestArray binds unnest(array) of an array held as text: the series
// of its positions, 1 to array_length(array, 1), each replaced by its
// element (buildOutput); a NULL element is a row of NULL, as in PostgreSQL.
func (b *binder) bindUnnestArray(ctx *exprCtx, f *ast.FuncCallExpr) (*srfCall, *expr.Expr, error) {
	arr, err := b.bindExpr(ctx, f.Args[0])
	if err != nil {
		return nil, nil, err
	}
	if !accepts(types.StringType, arr.Type) {
		return nil, nil, b.errorf(ErrUnknownFunction, f, "function unnest(%s) does not exist", arr.Type)
	}
	arr = expr.Cast(arr, types.StringType)
	hi := expr.Call("array_length", types.Int64Type, arr, expr.Literal(types.IntValue(1)))
	return &srfCall{fn: "generate_series", extra: []*expr.Expr{hi, expr.Literal(types.IntValue(1))}, array: arr,
			intElems: intArrayColumn(f.Args[0])}, // bind_srf_arrays.go
		expr.Literal(types.IntValue(1)), nil
}

// columnsOf returns a column reference to each of schema's columns.
func columnsOf(schema types.Schema) []*expr.Expr {
	cols := make([]*expr.Expr, len(schema))
	for i, f := range schema {
		cols[i] = expr.Column(i, f.Type, f.Name)
	}
	return cols
}

// accepts reports whether an argument of type have may be passed as want: only
// NULL converts implicitly, and a narrower form of want is one (an integer is
// a bigint, a character varying text).
func accepts(want, have types.Type) bool {
	return have == want || have.ID == types.Null || have.Narrow() && have.Base() == want
}

// bindGroupBy binds GROUP BY items as PostgreSQL does: an integer is a select
// list position, a bare name is an input column if there is one and otherwise a
// select list alias, anything else an expression over the input.
//
// It also returns, for each item, the index of its key among the keys (two
// items of one expression share one).
func (b *binder) bindGroupBy(sc *scope, gb *ast.GroupByClause, items []selectItem) ([]*expr.Expr, []int, error) {
	gctx := &exprCtx{scope: sc, clause: "GROUP BY"}
	var groups []*expr.Expr
	var itemGroup []int
	for _, by := range gb.Items {
		var item *selectItem
		if k, ok := ordinal(by.Expr); ok {
			if k < 1 || k > len(items) {
				return nil, nil, Errorf(ErrInvalidColumnReference, b.ordinalPos(by.Expr, k), "GROUP BY position %d is not in select list", k)
			}
			item = &items[k-1]
		} else if c, ok := by.Expr.(*ast.ColumnNameExpr); ok && c.Name.Table.O == "" {
			if _, param := paramNumber(c.Name); !param && len(sc.lookup("", c.Name.Name.O)) == 0 {
				for i := range items {
					if items[i].name == c.Name.Name.O {
						item = &items[i]
						break
					}
				}
			}
		}
		var e *expr.Expr
		if item != nil {
			if item.srf != nil {
				return nil, nil, b.errorf(ErrUnsupported, by.Expr, "set-returning functions are not allowed in GROUP BY")
			}
			if hasAggRef(item.e) {
				return nil, nil, b.errorf(ErrGrouping, by.Expr, "aggregate functions are not allowed in GROUP BY")
			}
			e = item.e
		} else {
			var err error
			if e, err = b.bindExpr(gctx, by.Expr); err != nil {
				return nil, nil, err
			}
		}
		at := -1
		for i, g := range groups {
			if at < 0 && sameExpr(g, e) {
				at = i
			}
		}
		if at < 0 {
			at = len(groups)
			groups = append(groups, e)
		}
		itemGroup = append(itemGroup, at)
	}
	return groups, itemGroup, nil
}

// ordinal recognises a select list position: ORDER BY 2, GROUP BY 1, and
// as in PostgreSQL, whose grammar drops parentheses, ORDER BY (2).
func ordinal(n ast.ExprNode) (int, bool) {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	switch n := n.(type) {
	case *ast.PositionExpr:
		if n.P == nil {
			return n.N, true
		}
	case *test_driver.ValueExpr:
		if n.Kind() == test_driver.KindInt64 && n.GetType().GetFlag()&mysql.IsBooleanFlag == 0 {
			return int(n.GetInt64()), true
		}
	}
	return 0, false
}

// ordinalPos places an error about GROUP BY or ORDER BY position k: the parser
// records no position for it, so look for the number after BY.
func (b *binder) ordinalPos(n ast.ExprNode, k int) int {
	if p := b.pos(n); p > 0 {
		return p
	}
	return b.identPos(strconv.Itoa(k), "by")
}

// bindOrderBy binds ORDER BY as PostgreSQL does: a position or an output column
// name picks that column; any other expression is bound over the input, reusing
// a select item that computes the same thing or adding a hidden column.
func (b *binder) bindOrderBy(ctx *exprCtx, ob *ast.OrderByClause, items []selectItem) (keys []SortKey, hidden []*expr.Expr, hiddenAt ast.Node, err error) {
	for _, by := range ob.Items {
		col := -1
		if k, ok := ordinal(by.Expr); ok {
			if k < 1 || k > len(items) {
				return nil, nil, nil, Errorf(ErrInvalidColumnReference, b.ordinalPos(by.Expr, k), "ORDER BY position %d is not in select list", k)
			}
			col = k - 1
		} else if c, ok := by.Expr.(*ast.ColumnNameExpr); ok && c.Name.Table.O == "" {
			for i, it := range items {
				if it.name != c.Name.Name.O {
					continue
				}
				if col >= 0 && (items[col].srf != nil || it.srf != nil || !sameExpr(items[col].e, it.e)) {
					return nil, nil, nil, b.errorf(ErrAmbiguousColumn, by.Expr, "ORDER BY \"%s\" is ambiguous", it.name)
				}
				if col < 0 {
					col = i
				}
			}
		}
		if col < 0 {
			e, err := b.bindExpr(ctx, by.Expr)
			if err != nil {
				return nil, nil, nil, err
			}
			for i, it := range items {
				if it.srf == nil && sameExpr(it.e, e) {
					col = i
					break
				}
			}
			for i, h := range hidden {
				if col < 0 && sameExpr(h, e) {
					col = len(items) + i
				}
			}
			if col < 0 {
				if hiddenAt == nil {
					hiddenAt = by.Expr
				}
				hidden = append(hidden, e)
				col = len(items) + len(hidden) - 1
			}
		}
		if col, hidden, err = b.intervalSortKey(by.Expr, col, items, hidden); err != nil { // bind_interval.go
			return nil, nil, nil, err
		}
		key := SortKey{Col: col, Desc: by.Desc, NullsFirst: by.Desc}
		if first, ok := b.nullsOrder(by.Expr); ok {
			key.NullsFirst = first
		}
		keys = append(keys, key)
	}
	return keys, hidden, hiddenAt, nil
}

// buildOutput builds the select list's Project (plus Unnest for a set-returning
// item), DISTINCT, ORDER BY, LIMIT, and the Project that drops hidden ORDER BY
// columns.
func (b *binder) buildOutput(sel *ast.SelectStmt, input Plan, items []selectItem, hidden []*expr.Expr, keys []SortKey, corr *correlation) (Plan, error) {
	exprs := make([]*expr.Expr, 0, len(items)+len(hidden))
	out := make(types.Schema, 0, len(items)+len(hidden))
	srf := -1
	for i, it := range items {
		if it.e.Type.ID == types.Null {
			// PostgreSQL resolves an untyped NULL output column as text.
			it.e = expr.Cast(it.e, types.StringType)
		}
		exprs = append(exprs, it.e)
		out = append(out, types.Field{Name: it.name, Type: it.e.Type})
		if it.srf != nil && srf < 0 {
			srf = i // the first; any other runs in lockstep with it (lockstep)
		}
	}
	for _, h := range hidden {
		exprs = append(exprs, h)
		out = append(out, types.Field{Name: "?column?", Type: h.Type})
	}
	var top Plan = &Project{Input: input, Exprs: exprs, Out: out}
	if srfs := srfItems(items); len(srfs) > 1 || len(srfs) == 1 && items[srfs[0]].srf.subscripts {
		top = arraysOutput(input, items, exprs, out, srfs) // bind_srf_arrays.go
	} else if srf >= 0 && items[srf].srf.fn == "generate_series" {
		// hi and step (and an unnest's array) go after the output's
		// columns, for the series only.
		call := items[srf].srf
		n := len(exprs)
		wide := append(append(types.Schema{}, out...), types.Field{Name: "$hi", Type: call.extra[0].Type}, types.Field{Name: "$step", Type: types.Int64Type})
		wideExprs := append(append([]*expr.Expr{}, exprs...), call.extra...)
		if call.array != nil {
			wide = append(wide, types.Field{Name: "$array", Type: types.StringType})
			wideExprs = append(wideExprs, call.array)
		}
		top = &Project{Input: input, Exprs: wideExprs, Out: wide}
		top = &Unnest{Input: top, Col: srf, Func: "generate_series", Hi: n, Step: n + 1, Out: wide}
		cols := columnsOf(wide[:n])
		if call.array != nil {
			// The element at each position of the array (or what the item
			// makes of it).
			pos, arr := cols[srf], expr.Column(n+2, types.StringType, "$array")
			cols[srf] = call.element(arr, pos)
			out[srf].Type = cols[srf].Type
			if call.intElems && call.elem == nil {
				cols[srf], out[srf].Type = expr.Cast(cols[srf], types.Int64Type), types.Int64Type
			}
		}
		top = &Project{Input: top, Exprs: cols, Out: out}
	} else if srf >= 0 {
		top = &Unnest{Input: top, Col: srf, Func: items[srf].srf.fn, Sep: items[srf].srf.sep, Out: out}
	}
	if sel.Distinct {
		groupBy := make([]int, len(out))
		for i := range groupBy {
			groupBy[i] = i
		}
		top = &Aggregate{Input: top, GroupBy: groupBy, Out: out}
	}
	switch {
	case corr != nil && sel.Limit != nil:
		// A correlated subquery's LIMIT is per domain value (bind_correlated.go).
		var err error
		if top, err = b.topPerDomain(sel.Limit, top, keys, len(items), corr); err != nil {
			return nil, err
		}
	case corr != nil:
		// Its rows are joined to the enclosing query's: their order is lost.
	default:
		if len(keys) > 0 {
			top = &Sort{Input: top, Keys: keys}
		}
		if sel.Limit != nil {
			l, err := b.bindLimit(sel.Limit)
			if err != nil {
				return nil, err
			}
			l.Input = top
			top = l
		}
	}
	if len(hidden) > 0 {
		n := len(items)
		drop := make([]*expr.Expr, n)
		for i := range drop {
			drop[i] = expr.Column(i, out[i].Type, out[i].Name)
		}
		top = &Project{Input: top, Exprs: drop, Out: out[:n:n]}
	}
	return top, nil
}

func (b *binder) bindLimit(l *ast.Limit) (*Limit, error) {
	lim := &Limit{Count: -1}
	value := func(n ast.ExprNode, what string) (int64, error) {
		v, ok := n.(*test_driver.ValueExpr)
		if !ok {
			return 0, b.errorf(ErrUnsupported, n, "%s must be an integer constant", what)
		}
		switch v.Kind() {
		case test_driver.KindInt64:
			if v.GetInt64() < 0 {
				return 0, b.errorf(ErrInvalidValue, n, "%s must not be negative", what)
			}
			return v.GetInt64(), nil
		case test_driver.KindUint64:
			return int64(min(v.GetUint64(), 1<<63-1)), nil
		}
		return 0, b.errorf(ErrUnsupported, n, "%s must be an integer constant", what)
	}
	var err error
	if p, ok := l.Count.(*test_driver.ParamMarkerExpr); ok {
		lim.CountParam = b.markerParam(p)
	} else if l.Count != nil {
		if lim.Count, err = value(l.Count, "LIMIT"); err != nil {
			return nil, err
		}
	}
	if p, ok := l.Offset.(*test_driver.ParamMarkerExpr); ok {
		lim.OffsetParam = b.markerParam(p)
	} else if l.Offset != nil {
		if lim.Offset, err = value(l.Offset, "OFFSET"); err != nil {
			return nil, err
		}
	}
	lim.Clamp()
	return lim, nil
}

// exprName is PostgreSQL's name for an unaliased select item: a column's name,
// a function's name, "case", else "?column?".
func (b *binder) exprName(n ast.ExprNode) string {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		if isArrayAgg(n.Expr) { // bind_pgtypes.go
			return "array_agg"
		}
		return b.exprName(n.Expr)
	case *ast.ColumnNameExpr:
		if _, ok := paramNumber(n.Name); !ok {
			return n.Name.Name.O
		}
	case *ast.FuncCallExpr:
		if name, ok := b.funcCastName(n); ok { // bind_pgtypes.go
			return name
		}
		switch n.FnName.L {
		case ast.TimestampLiteral:
			return "timestamp"
		case ast.DateLiteral:
			return "date"
		case "concat":
			if b.isPipes(n) {
				return "?column?"
			}
		case "array_build": // ARRAY[...] (dialect_pg.go)
			return "array"
		}
		return n.FnName.L
	case *ast.AggregateFuncExpr:
		return strings.ToLower(n.F)
	case *ast.WindowFuncExpr: // sum(x) OVER (...) is sum, as the aggregate
		return strings.ToLower(n.Name)
	case *ast.FuncCastExpr:
		if name := b.exprName(n.Expr); name != "?column?" && !b.namedByType(n.Expr) {
			return name
		}
		if !b.facts.empty() {
			if name, ok := b.facts.castNames[n.OriginTextPosition()]; ok {
				return name // as PostgreSQL names it: ::integer is int4
			}
		}
		if t, err := b.sqlType(n.Tp, n); err == nil {
			return t.ID.String()
		}
	case *ast.CaseExpr:
		return "case"
	case *ast.SubqueryExpr:
		return b.subqueryName(n) // bind_pgclients.go
	case *ast.ExistsSubqueryExpr:
		return "exists"
	case *test_driver.ValueExpr:
		if n.Kind() == test_driver.KindInt64 && n.GetType().GetFlag()&mysql.IsBooleanFlag != 0 {
			return "bool"
		}
	}
	return "?column?"
}

// exprDisplayName names an intermediate column computed by e.
func exprDisplayName(e *expr.Expr) string {
	if e.Kind == expr.KindColumn && e.Name != "" {
		return e.Name
	}
	return "?column?"
}
