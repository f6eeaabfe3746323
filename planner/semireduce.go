package planner

// The probe-side reducer of a semi or anti join built on its left side. Such
// a join emits each build row that some probe row matched (or that none
// did), which needs all the probe rows of a key in one instance: both sides
// are repartitioned on the keys. When the build side is small and the probe
// side large, most probe rows match no build row, and crossing the
// repartition is most of what they cost: TPC-H q4 repartitions 3.8 million
// lineitem rows for 57 thousand orders, q21 6 and 3.8 million for 75
// thousand rows. The reducer first drops them where they are: the build
// side's keys, broadcast to every instance of the probe side, are the build
// side of a semi join (right side built) that passes on only the probe rows
// whose keys some build row has, and only those are repartitioned.
//
// The result is the same: a probe row whose keys no build row has matches no
// build row, whatever the join's extra condition, so neither the semi join's
// output (the build rows some probe row matched) nor the anti join's (those
// none matched) depends on it. A NULL key matches nothing in either join.

import (
	"fmt"
	"strings"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// reduceProbe reports whether semi or anti join p, built on its left side,
// whose right (probe) side is node right, should have that side reduced
// (reducedProbe) before it is repartitioned: on broadcastLeft's terms, a
// build side estimated small enough to copy to every instance of the probe
// side, for less than the probe side's rows.
func (b *builder) reduceProbe(p *sql.Join, right int) bool {
	return p.Kind.Filters() && len(p.LeftKeys) > 0 && b.cheapBroadcast(p.Left, p.Right, right)
}

// reducedProbe returns the node of join p's right side (node right) with
// only the rows whose keys some row of its left side (node left) has: a semi
// join of right, forward, to left's key columns, broadcast.
func (b *builder) reducedProbe(p *sql.Join, left, right int) int {
	ls, rs := p.Left.Schema(), p.Right.Schema()
	keys := make(types.Schema, len(p.LeftKeys))
	exprs := make([]*expr.Expr, len(p.LeftKeys))
	buildKeys := make([]int, len(p.LeftKeys))
	for i, c := range p.LeftKeys {
		keys[i] = ls[c]
		exprs[i] = expr.Column(c, ls[c].Type, ls[c].Name)
		buildKeys[i] = i
	}
	keyNode := b.forward(left, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, keys)
	cfg := operators.JoinConfig{Kind: "semi", LeftKeys: p.RightKeys, RightKeys: buildKeys,
		Left: rs, Right: keys, MemoryLimit: b.opts.WorkMem}
	s := make([]string, len(p.RightKeys))
	for i, c := range p.RightKeys {
		s[i] = rs[c].Name + " = " + keys[i].Name
	}
	label := fmt.Sprintf("hash_join semi on %s (right side broadcast) (probe side reduced)", strings.Join(s, " and "))
	op := exec.OperatorSpec{Kind: "hash_join", Label: label, Config: exec.MustConfig(cfg), Out: rs}
	return b.pass(right, b.add(op, b.par(right), 0, in(right, exec.Forward), in(keyNode, exec.Broadcast)))
}
