package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Grouping sets: GROUP BY ROLLUP (...), CUBE (...), GROUPING SETS (...) (through
// the dialect layer, dialect_grouping.go) and MySQL's GROUP BY ... WITH ROLLUP.
// Each set is aggregated on its own and the results are concatenated (UNION
// ALL), every set's output laid out as the whole GROUP BY's: the keys it does
// not group by are NULL. GROUPING(a, ...) is a constant per set: a bit per
// argument, the first the highest, set when the argument is not grouped by.

// groupingSetsOf returns the grouping sets of gb as indexes into the query's
// group keys (itemGroup maps each GROUP BY item to its key), or nil for a plain
// GROUP BY.
func (b *binder) groupingSetsOf(gb *ast.GroupByClause, itemGroup []int) [][]int {
	var sets [][]int
	switch {
	case gb.Rollup:
		// MySQL's WITH ROLLUP: the items' prefixes, longest first.
		for n := len(gb.Items); n >= 0; n-- {
			sets = append(sets, append([]int{}, itemGroup[:n]...))
		}
		return sets
	case b.facts.empty() || len(gb.Items) == 0:
		return nil
	}
	off := gb.Items[0].Expr.OriginTextPosition()
	fact, ok := b.facts.groupingSets[off]
	if !ok {
		return nil
	}
	if b.used == nil {
		b.used = map[int]bool{}
	}
	b.used[off] = true
	for _, s := range fact {
		set := []int{}
		for _, item := range s {
			g := itemGroup[item]
			if !containsInt(set, g) {
				set = append(set, g)
			}
		}
		sets = append(sets, set)
	}
	return sets
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// bindGrouping binds GROUPING(args) as an aggregate-like call whose value
// buildGroupingSets computes per set.
func (b *binder) bindGrouping(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, error) {
	if ctx.aggs == nil || ctx.inAgg {
		return nil, b.errorf(ErrGrouping, n, "GROUPING is not allowed in %s", ctx.where())
	}
	if len(n.Args) == 0 || len(n.Args) > 31 {
		return nil, b.errorf(ErrUnknownFunction, n, "GROUPING takes 1 to 31 arguments")
	}
	call := aggBound{fn: "grouping", typ: types.Int64Type}
	for _, a := range n.Args {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, err
		}
		call.gargs = append(call.gargs, e)
		call.gnodes = append(call.gnodes, a)
	}
	return ctx.aggs.ref(call), nil
}

// hasGrouping reports whether the aggregation has GROUPING calls.
func (s *aggState) hasGrouping() bool {
	for _, c := range s.calls {
		if c.fn == "grouping" {
			return true
		}
	}
	return false
}

// buildGroupingSets is buildAggregate for grouping sets (nil sets: the one set
// of every key, for a GROUPING call under a plain GROUP BY).
func (b *binder) buildGroupingSets(input Plan, groups []*expr.Expr, sets [][]int, aggs *aggState, post []*expr.Expr) (Plan, []*expr.Expr, error) {
	if sets == nil {
		all := make([]int, len(groups))
		for i := range all {
			all[i] = i
		}
		sets = [][]int{all}
	}
	// The real aggregates, computed by every set's Aggregate; the GROUPING
	// calls' arguments as key indexes.
	real := &aggState{}
	at := make([]int, len(aggs.calls)) // call -> index among the real ones, or -1
	gkeys := make([][]int, len(aggs.calls))
	for i, c := range aggs.calls {
		at[i] = -1
		if c.fn != "grouping" {
			at[i] = len(real.calls)
			real.calls = append(real.calls, c)
			continue
		}
		for k, a := range c.gargs {
			idx := -1
			for j, g := range groups {
				if sameExpr(g, a) {
					idx = j
				}
			}
			if idx < 0 {
				return nil, nil, b.errorf(ErrGrouping, c.gnodes[k], "arguments to GROUPING must be grouping expressions of the associated query level")
			}
			gkeys[i] = append(gkeys[i], idx)
		}
	}
	out := make(types.Schema, 0, len(groups)+len(aggs.calls))
	for _, g := range groups {
		out = append(out, types.Field{Name: exprDisplayName(g), Type: g.Type})
	}
	for _, c := range aggs.calls {
		out = append(out, types.Field{Name: c.fn, Type: c.typ})
	}
	var union Plan
	for _, set := range sets {
		keys := make([]*expr.Expr, len(set))
		for i, g := range set {
			keys[i] = groups[g]
		}
		agg, _, err := b.buildAggregate(input, keys, real, nil)
		if err != nil {
			return nil, nil, err
		}
		aggOut := agg.Schema()
		exprs := make([]*expr.Expr, 0, len(out))
		for g, f := range out[:len(groups)] {
			e := expr.Literal(types.NullValue(f.Type))
			for i, sg := range set {
				if sg == g {
					e = expr.Column(i, aggOut[i].Type, aggOut[i].Name)
				}
			}
			exprs = append(exprs, e)
		}
		for i := range aggs.calls {
			if at[i] >= 0 {
				col := len(set) + at[i]
				exprs = append(exprs, expr.Column(col, aggOut[col].Type, aggOut[col].Name))
				continue
			}
			var v int64
			for _, g := range gkeys[i] {
				v <<= 1
				if !containsInt(set, g) {
					v |= 1
				}
			}
			exprs = append(exprs, expr.Literal(types.IntValue(v)))
		}
		var branch Plan = &Project{Input: agg, Exprs: exprs, Out: out}
		if union == nil {
			union = branch
		} else {
			union = &Union{Left: union, Right: branch, Out: out}
		}
	}
	conv := make([]*expr.Expr, len(post))
	for i, e := range post {
		c, err := b.toAggSpace(e, groups, out)
		if err != nil {
			return nil, nil, err
		}
		conv[i] = c
	}
	return union, conv, nil
}
