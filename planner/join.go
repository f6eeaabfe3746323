package planner

// How a bounded join is laid out: which side is built, and whether the built
// side is copied to every instance (broadcast) or both sides are
// repartitioned by their keys.

import (
	"fmt"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// broadcastRows is the most rows a join's build side is estimated to have
// for broadcast to copy it to every instance of the join: each then holds
// the whole side, in exchange for the probe side staying where it is, in
// the task that produced it, instead of crossing a repartition.
const broadcastRows = 1 << 20

// broadcast reports whether join p, whose left side is node left, should
// take its right (build) side broadcast and its left side forward: a bounded
// inner or left join (a full join's unmatched build rows would come out of
// every instance) whose build side is estimated small, with its left side
// already running in parallel at the join's parallelism. Copying the build
// side to every instance must also cost less than what it saves, moving
// the probe side: its rows times the parallelism at most the probe side's.
func (b *builder) broadcast(p *sql.Join, left int) bool {
	if b.streaming || b.opts.Rows == nil || p.Kind == sql.FullJoin ||
		b.par(left) != b.opts.Parallelism || b.opts.Parallelism == 1 {
		return false
	}
	n, ok := b.opts.Rows(p.Right, true)
	if !ok || n > broadcastRows {
		return false
	}
	m, ok := b.opts.Rows(p.Left, false)
	return ok && n*float64(b.opts.Parallelism) <= m
}

// buildLeft reports whether bounded join p, inner or left, with keys, should
// build its hash table on its left side: when that side is estimated at
// less than half the right one's rows, the smaller table to build and hold,
// estimating the left side high and the right one low.
func (b *builder) buildLeft(p *sql.Join) bool {
	if b.streaming || b.opts.Rows == nil || len(p.LeftKeys) == 0 || p.Kind == sql.FullJoin {
		return false
	}
	l, okL := b.opts.Rows(p.Left, true)
	r, okR := b.opts.Rows(p.Right, false)
	return okL && okR && r > 2*l
}

// leftBuiltJoin plans join p with its sides swapped for the operator, which
// builds on its input 1: the right side probes the left's table (a left
// join runs as the operator's right join, which emits the build rows no
// probe row matched at the end), and a projection puts the columns back in
// p's order.
func (b *builder) leftBuiltJoin(p *sql.Join, left, right int) int {
	ls, rs := p.Left.Schema(), p.Right.Schema()
	nl, nr := len(ls), len(rs)
	kind := "inner"
	switch p.Kind {
	case sql.LeftJoin:
		kind = "right"
	case sql.SemiJoin:
		kind = "right_semi" // the left rows, built, that some right row matched
	case sql.AntiJoin:
		kind = "right_anti"
	}
	var extra *expr.Expr
	if p.Extra != nil {
		m := map[int]int{}
		for _, c := range p.Extra.Columns(nil) {
			if c < nl {
				m[c] = nr + c
			} else {
				m[c] = c - nl
			}
		}
		extra = p.Extra.Remap(m)
	}
	cfg := operators.JoinConfig{Kind: kind, LeftKeys: p.RightKeys, RightKeys: p.LeftKeys, Extra: extra,
		Left: rs, Right: ls, MemoryLimit: b.opts.WorkMem}
	label := fmt.Sprintf("hash_join %s on %s (left side built)", p.Kind, joinKeys(p))
	if p.Extra != nil {
		label += " and " + p.Extra.String()
	}
	out := append(append(types.Schema{}, rs...), ls...)
	if p.Kind.Filters() {
		out = ls // the build side's columns, in p's order already
	}
	op := exec.OperatorSpec{Kind: "hash_join", Label: label, Config: exec.MustConfig(cfg), Out: out}
	node := b.add(op, b.opts.Parallelism, 0, in(right, exec.Hash, p.RightKeys...), in(left, exec.Hash, p.LeftKeys...))
	if p.Kind.Filters() {
		return node
	}
	exprs := make([]*expr.Expr, len(p.Out))
	for i, f := range p.Out {
		src := i - nl
		if i < nl {
			src = nr + i
		}
		exprs[i] = expr.Column(src, f.Type, f.Name)
	}
	return b.forward(node, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, p.Out)
}
