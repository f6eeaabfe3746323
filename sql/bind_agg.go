package sql

import (
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
	for i, c := range ctx.aggs.calls {
		if c.fn == fn && c.distinct == distinct && sameExpr(c.arg, arg) {
			return &expr.Expr{Kind: kindAggRef, Col: i, Type: c.typ}, nil
		}
	}
	ctx.aggs.calls = append(ctx.aggs.calls, aggBound{fn: fn, distinct: distinct, arg: arg, typ: typ})
	return &expr.Expr{Kind: kindAggRef, Col: len(ctx.aggs.calls) - 1, Type: typ}, nil
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
		calls[i] = AggCall{Func: c.fn, Arg: arg, Distinct: c.distinct, Type: c.typ}
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
