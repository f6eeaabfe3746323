package sql

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Aggregation is bound in two steps. While the select list, HAVING and ORDER BY
// are bound over the FROM scope, each aggregate call is registered in an
// aggState and replaced by a marker (kindAggRef). buildAggregate then builds
// Project (group keys, aggregate arguments) -> Aggregate and rewrites those
// expressions to read the Aggregate's output (toAggSpace).

// aggState collects the distinct aggregate calls of one SELECT.
type aggState struct{ calls []aggBound }

type aggBound struct {
	fn       string
	distinct bool
	arg      *expr.Expr // over the FROM scope; nil for COUNT(*)
	typ      types.Type
	// string_agg's separator and ORDER BY (over the FROM scope).
	sep   string
	order []aggOrder
	// GROUPING's arguments (bind_grouping.go), and their nodes for errors.
	gargs  []*expr.Expr
	gnodes []ast.ExprNode
}

type aggOrder struct {
	e                *expr.Expr
	desc, nullsFirst bool
}

// same reports whether two aggregate calls compute the same value.
func (c aggBound) same(d aggBound) bool {
	if c.fn != d.fn || c.distinct != d.distinct || !sameExpr(c.arg, d.arg) || c.sep != d.sep || len(c.order) != len(d.order) ||
		len(c.gargs) != len(d.gargs) {
		return false
	}
	for i, a := range c.gargs {
		if !sameExpr(a, d.gargs[i]) {
			return false
		}
	}
	for i, o := range c.order {
		if !sameExpr(o.e, d.order[i].e) || o.desc != d.order[i].desc || o.nullsFirst != d.order[i].nullsFirst {
			return false
		}
	}
	return true
}

// bindAggregate registers an aggregate call with ctx.aggs and returns a marker
// for it. Result types follow PostgreSQL where a fixed type can:
//
//	count            bigint
//	sum(bigint)      decimal(38,0)      (PostgreSQL: numeric)
//	sum(decimal p,s) decimal(38,s)
//	sum(double)      double
//	avg(bigint)      decimal(38,16)     (an average of bigints has at most 19
//	                                     integer digits; 16 is the scale
//	                                     PostgreSQL shows for small averages)
//	avg(decimal p,s) decimal(38, max(s, min(16, 38-(p-s))))
//	avg(double)      double
//	min, max         the argument's type
func (b *binder) bindAggregate(ctx *exprCtx, n *ast.AggregateFuncExpr) (*expr.Expr, error) {
	fn := strings.ToLower(n.F)
	if ctx.aggs == nil {
		return nil, b.errorf(ErrGrouping, n, "aggregate functions are not allowed in %s", ctx.where())
	}
	if ctx.inAgg {
		return nil, b.errorf(ErrGrouping, n, "aggregate function calls cannot be nested")
	}
	switch fn {
	case "count", "sum", "avg", "min", "max":
	case "group_concat":
		return b.bindStringAgg(ctx, n)
	default:
		return nil, b.errorf(ErrUnsupported, n, "aggregate function %s is not supported", fn)
	}
	if n.Order != nil || len(n.Args) != 1 {
		return nil, b.errorf(ErrUnsupported, n, "this form of %s is not supported", fn)
	}
	var arg *expr.Expr
	typ := types.Int64Type
	if fn == "count" && !n.Distinct && isRowCount(n.Args[0]) && ctx.scope != nil && ctx.scope.countRows != nil {
		arg = ctx.scope.countRows // a correlated subquery's: not its domain rows
	} else if fn != "count" || n.Distinct || !isRowCount(n.Args[0]) {
		inner := *ctx
		inner.inAgg = true
		if ctx.preSubs != nil {
			inner.subs = ctx.preSubs
		}
		a, err := b.bindExpr(&inner, n.Args[0])
		if err != nil {
			return nil, err
		}
		at, rt, ok := aggSignature(fn, a.Type)
		if !ok {
			return nil, b.errorf(ErrUnknownFunction, n, "function %s(%s) does not exist", fn, a.Type)
		}
		arg, typ = expr.Cast(a, at), rt
	}
	distinct := n.Distinct && fn != "min" && fn != "max"
	if (fn == "min" || fn == "max") && typ.OID == types.OIDInterval {
		// The text of an interval does not sort as the interval: min and
		// max take it keyed by its order, the key taken off after.
		keyed, err := b.call(n, "$interval_ordered", arg)
		if err != nil {
			return nil, err
		}
		ref := ctx.aggs.ref(aggBound{fn: fn, arg: keyed, typ: types.StringType})
		return b.call(n, "$interval_unordered", ref)
	}
	return ctx.aggs.ref(aggBound{fn: fn, distinct: distinct, arg: arg, typ: typ}), nil
}

// ref returns the marker of call, registering it unless an equal call is.
func (s *aggState) ref(call aggBound) *expr.Expr {
	for i, c := range s.calls {
		if c.same(call) {
			return &expr.Expr{Kind: kindAggRef, Col: i, Type: c.typ}
		}
	}
	s.calls = append(s.calls, call)
	return &expr.Expr{Kind: kindAggRef, Col: len(s.calls) - 1, Type: call.typ}
}

// bindStringAgg binds GROUP_CONCAT([DISTINCT] x [, y ...] [ORDER BY ...]
// [SEPARATOR s]), which is also what PostgreSQL's string_agg(x, s [ORDER BY
// ...]) reads as (the dialect layer): the group's non-NULL values of x (of
// x, y, ... concatenated, as MySQL's) as text, joined by s (MySQL's default
// ','), ordered by the ORDER BY, NULL for a group without one. The parser
// gives the separator as the last argument; it must be a constant string.
func (b *binder) bindStringAgg(ctx *exprCtx, n *ast.AggregateFuncExpr) (*expr.Expr, error) {
	if len(n.Args) < 2 {
		return nil, b.errorf(ErrUnsupported, n, "this form of string_agg is not supported")
	}
	sepNode, ok := n.Args[len(n.Args)-1].(*test_driver.ValueExpr)
	if !ok || sepNode.Kind() != test_driver.KindString {
		return nil, b.errorf(ErrUnsupported, n.Args[len(n.Args)-1], "string_agg's separator must be a constant string")
	}
	inner := *ctx
	inner.inAgg = true
	if ctx.preSubs != nil { // a subquery in the argument, as bindAggregate's
		inner.subs = ctx.preSubs
	}
	var parts []*expr.Expr
	for _, a := range n.Args[:len(n.Args)-1] {
		e, err := b.bindExpr(&inner, a)
		if err != nil {
			return nil, err
		}
		parts = append(parts, expr.Cast(e, types.StringType))
	}
	arg := parts[0]
	if len(parts) > 1 {
		var err error
		if arg, err = b.call(n, "concat", parts...); err != nil {
			return nil, err
		}
	}
	call := aggBound{fn: "string_agg", distinct: n.Distinct, arg: arg, typ: types.StringType, sep: sepNode.GetString()}
	if n.Order != nil {
		for _, it := range n.Order.Items {
			e, err := b.bindExpr(&inner, it.Expr)
			if err != nil {
				return nil, err
			}
			o := aggOrder{e: e, desc: it.Desc, nullsFirst: it.Desc}
			if first, ok := b.nullsOrder(it.Expr); ok {
				o.nullsFirst = first
			}
			call.order = append(call.order, o)
		}
	}
	return ctx.aggs.ref(call), nil
}

// isRowCount reports whether COUNT's argument counts every row: * (which the
// parser gives as the literal 1) or any other non-NULL constant.
func isRowCount(n ast.ExprNode) bool {
	v, ok := n.(*test_driver.ValueExpr)
	return ok && v.Kind() != test_driver.KindNull
}

// aggSignature returns the type an aggregate's argument is cast to and its result
// type (see bindAggregate), or ok=false when fn does not take t.
func aggSignature(fn string, t types.Type) (arg, result types.Type, ok bool) {
	if t.ID == types.Null {
		t = types.Int64Type
	}
	switch fn {
	case "count":
		return t, types.Int64Type, true
	case "min", "max":
		return t, t, true
	case "sum":
		switch t.ID {
		case types.Int64:
			if _, _, narrow := t.IntRange(); narrow && t.OID != types.OIDOid {
				return t, types.Int64Type, true // sum(integer) is a bigint, as PostgreSQL's
			}
			return t, types.DecimalType(38, 0), true
		case types.Decimal:
			return t, types.DecimalType(38, int(t.Scale)), true
		case types.Float64:
			return t, t, true
		}
	case "avg":
		switch t.ID {
		case types.Int64:
			return t, types.DecimalType(38, 16), true
		case types.Decimal:
			s := int(t.Scale)
			return t, types.DecimalType(38, max(s, min(16, 38-(int(t.Precision)-s)))), true
		case types.Float64:
			return t, t, true
		}
	}
	return types.Type{}, types.Type{}, false
}

// hasAggregate reports whether the select list, HAVING or ORDER BY calls an
// aggregate function.
func hasAggregate(sel *ast.SelectStmt) bool {
	v := &aggFinder{}
	for _, f := range sel.Fields.Fields {
		if f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	if sel.Having != nil {
		sel.Having.Expr.Accept(v)
	}
	if sel.OrderBy != nil {
		for _, it := range sel.OrderBy.Items {
			it.Expr.Accept(v)
		}
	}
	return v.found
}

type aggFinder struct{ found bool }

func (v *aggFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.AggregateFuncExpr:
		v.found = true
		return n, true
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.SelectStmt:
		return n, true
	}
	return n, false
}

func (v *aggFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// buildAggregate builds Project (group keys, then aggregate arguments) ->
// Aggregate, and rewrites the expressions computed after it (post) to read the
// Aggregate's output: group keys and aggregate results. A column that is
// neither grouped nor inside an aggregate is a grouping error.
func (b *binder) buildAggregate(input Plan, groups []*expr.Expr, aggs *aggState, post []*expr.Expr) (Plan, []*expr.Expr, error) {
	pre := append([]*expr.Expr{}, groups...)
	preOut := make(types.Schema, 0, len(pre))
	out := make(types.Schema, 0, len(groups)+len(aggs.calls))
	for _, g := range groups {
		f := types.Field{Name: exprDisplayName(g), Type: g.Type}
		preOut = append(preOut, f)
		out = append(out, f)
	}
	calls := make([]AggCall, len(aggs.calls))
	for i, c := range aggs.calls {
		arg := -1
		if c.arg != nil {
			for j, e := range pre {
				if sameExpr(e, c.arg) {
					arg = j
					break
				}
			}
			if arg < 0 {
				pre = append(pre, c.arg)
				preOut = append(preOut, types.Field{Name: exprDisplayName(c.arg), Type: c.arg.Type})
				arg = len(pre) - 1
			}
		}
		calls[i] = AggCall{Func: c.fn, Arg: arg, Distinct: c.distinct, Type: c.typ, Sep: c.sep}
		for _, o := range c.order {
			col := slices.IndexFunc(pre, func(e *expr.Expr) bool { return sameExpr(e, o.e) })
			if col < 0 {
				pre = append(pre, o.e)
				preOut = append(preOut, types.Field{Name: exprDisplayName(o.e), Type: o.e.Type})
				col = len(pre) - 1
			}
			calls[i].Order = append(calls[i].Order, SortKey{Col: col, Desc: o.desc, NullsFirst: o.nullsFirst})
		}
		out = append(out, types.Field{Name: c.fn, Type: c.typ})
	}
	groupBy := make([]int, len(groups))
	for i := range groupBy {
		groupBy[i] = i
	}
	agg := &Aggregate{Input: &Project{Input: input, Exprs: pre, Out: preOut}, GroupBy: groupBy, Aggs: calls, Out: out}
	conv := make([]*expr.Expr, len(post))
	for i, e := range post {
		c, err := b.toAggSpace(e, groups, out)
		if err != nil {
			return nil, nil, err
		}
		conv[i] = c
	}
	return agg, conv, nil
}

// toAggSpace rewrites e, bound over the FROM scope, to read an Aggregate's
// output: a subexpression equal to a group key reads that key, an aggregate
// marker reads its result.
func (b *binder) toAggSpace(e *expr.Expr, groups []*expr.Expr, out types.Schema) (*expr.Expr, error) {
	for i, g := range groups {
		if sameExpr(e, g) {
			return expr.Column(i, out[i].Type, out[i].Name), nil
		}
	}
	switch e.Kind {
	case kindWinRef:
		return e, nil // computed after the aggregation
	case kindAggRef:
		i := len(groups) + e.Col
		return expr.Column(i, out[i].Type, out[i].Name), nil
	case expr.KindColumn:
		if e.Col >= postBase {
			// A subquery's column, joined after the aggregation.
			i := len(out) + e.Col - postBase
			return expr.Column(i, e.Type, e.Name), nil
		}
		ref := b.refs[e]
		return nil, Errorf(ErrGrouping, ref.pos, "column \"%s\" must appear in the GROUP BY clause or be used in an aggregate function", ref.name)
	}
	if len(e.Args) == 0 {
		return e, nil
	}
	c := *e
	c.Args = make([]*expr.Expr, len(e.Args))
	for i, a := range e.Args {
		ca, err := b.toAggSpace(a, groups, out)
		if err != nil {
			return nil, err
		}
		c.Args[i] = ca
	}
	return &c, nil
}
