package planner

// Joins: the hash join of a bounded right side (broadcast, or built on the
// smaller side), and the regular stream join of inputs that never end or that
// change; the window join of two windowed results is window.go's.

import (
	"fmt"
	"slices"
	"strings"

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
	return p.Kind != sql.FullJoin && b.cheapBroadcast(p.Right, p.Left, left)
}

// cheapBroadcast reports whether a bounded join's build side, estimated
// high, is small enough to copy to every instance of its probe side (node
// probeNode, already running at the join's parallelism), for at most the
// probe side's rows, estimated low: broadcast's, broadcastLeft's and
// reduceProbe's terms.
func (b *builder) cheapBroadcast(build, probe sql.Plan, probeNode int) bool {
	if b.streaming || b.opts.Rows == nil || b.par(probeNode) != b.opts.Parallelism || b.opts.Parallelism == 1 {
		return false
	}
	n, ok := b.opts.Rows(build, true)
	if !ok || n > broadcastRows {
		return false
	}
	m, ok := b.opts.Rows(probe, false)
	return ok && n*float64(b.opts.Parallelism) <= m
}

// broadcastLeft reports whether inner join p, built on its left side
// (buildLeft), whose right side is node right, should take that left side
// broadcast and its right side forward, on broadcast's terms with the sides
// swapped: TPC-H q9's lineitem rows of the parts named like '%green%' are
// copied to both instances that read orders instead of repartitioning
// orders. (A semi, anti or left join built on its left side emits the build
// rows no instance or some instance matched, which needs every probe row in
// one place.)
func (b *builder) broadcastLeft(p *sql.Join, right int) bool {
	return p.Kind == sql.InnerJoin && b.cheapBroadcast(p.Left, p.Right, right)
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
// probe row matched at the end), and the join keeps the columns of out (p's
// columns keep, in p's pair order; all of them when keep is nil), which
// puts them back in p's order.
func (b *builder) leftBuiltJoin(p *sql.Join, left, right int, keep []int, out types.Schema) int {
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
	if b.broadcastLeft(p, right) {
		label += " (left side broadcast)"
	}
	if p.Kind.Filters() {
		op := exec.OperatorSpec{Kind: "hash_join", Label: label, Config: exec.MustConfig(cfg), Out: ls}
		if b.reduceProbe(p, right) {
			right = b.reducedProbe(p, left, right)
		}
		return b.add(op, b.opts.Parallelism, 0, in(right, exec.Hash, p.RightKeys...), in(left, exec.Hash, p.LeftKeys...))
	}
	if keep == nil {
		keep, out = allColumns(len(p.Out)), p.Out
	}
	for _, c := range keep { // p's pair order (left, right) to the operator's (right, left)
		if c < nl {
			cfg.Keep = append(cfg.Keep, nr+c)
		} else {
			cfg.Keep = append(cfg.Keep, c-nl)
		}
	}
	op := exec.OperatorSpec{Kind: "hash_join", Label: label + keptLabel(keep, len(p.Out), out), Config: exec.MustConfig(cfg), Out: out}
	if b.broadcastLeft(p, right) {
		return b.add(op, b.par(right), 0, in(right, exec.Forward), in(left, exec.Broadcast))
	}
	return b.add(op, b.opts.Parallelism, 0, in(right, exec.Hash, p.RightKeys...), in(left, exec.Hash, p.LeftKeys...))
}

// keptLabel names, for EXPLAIN, the columns a join keeps of its pairs of n
// columns: nothing when it keeps them all in order.
func keptLabel(keep []int, n int, out types.Schema) string {
	if slices.Equal(keep, allColumns(n)) {
		return ""
	}
	return " keep " + names(out)
}

// allColumns returns 0..n-1.
func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// join plans a join.
func (b *builder) join(p *sql.Join) (int, error) {
	node, _, err := b.joinKeeping(p, nil, nil)
	return node, err
}

// joinKeeping plans join p with only the columns keep of its output (by
// position in p.Out), of schema out, when its operator can leave the others
// out (kept reports it did); all of them when keep is nil.
func (b *builder) joinKeeping(p *sql.Join, keep []int, out types.Schema) (node int, kept bool, err error) {
	left, err := b.build(p.Left)
	if err != nil {
		return 0, false, err
	}
	right, err := b.build(p.Right)
	if err != nil {
		return 0, false, err
	}
	if !b.updates[left] && !b.updates[right] {
		if l, r, ok := windowJoinEnds(p); ok {
			return b.windowJoin(p, left, right, l, r), false, nil
		}
		if iv, ok := intervalBounds(p); ok && b.streaming {
			return b.intervalJoin(p, left, right, iv), false, nil
		}
	}
	// The hash join reads its right side to the end and keeps it as it
	// was, and a FULL JOIN's unmatched right rows wait for its left
	// side's end: in a continuous query, a right side that never ends or
	// that changes, or a FULL JOIN, needs the regular stream join, which
	// keeps both sides. Otherwise the hash join, whose left side may be a
	// stream: it keeps only the right side. (A bounded query's sides end,
	// and the tables it reads with a PRIMARY KEY, read through an upsert
	// operator, count as changing: the batch hash join stays theirs.)
	rightChanges := b.updates[right] || Continuous(p.Right, b.opts.Unbounded)
	if b.streaming && rightChanges && p.Kind.Filters() {
		return 0, false, sql.Errorf(sql.ErrUnsupported, 0,
			"EXISTS and NOT EXISTS over a subquery that reads a stream, or a table that changes, are not supported in a continuous query yet (the subquery must be read to its end)")
	}
	if b.streaming && (rightChanges || p.Kind == sql.FullJoin) {
		node, err := b.streamJoin(p, left, right)
		return node, false, err
	}
	if b.buildLeft(p) && len(p.LeftKeys) > 0 && !b.broadcast(p, left) {
		if len(keep) == 0 {
			keep, out = nil, nil
		}
		return b.pass(left, b.leftBuiltJoin(p, left, right, keep, out)), keep != nil && !p.Kind.Filters(), nil
	}
	cfg := operators.JoinConfig{Kind: p.Kind.String(), LeftKeys: p.LeftKeys, RightKeys: p.RightKeys,
		Extra: p.Extra, Left: p.Left.Schema(), Right: p.Right.Schema(), MemoryLimit: b.opts.WorkMem}
	if b.streaming {
		cfg.MemoryLimit = -1 // its left side never ends: a spill would never be joined
	}
	label := fmt.Sprintf("hash_join %s on %s", p.Kind, joinKeys(p))
	if p.Extra != nil {
		label += " and " + p.Extra.String()
	}
	if len(p.LeftKeys) == 0 {
		label = fmt.Sprintf("nested_loop_join %s", p.Kind)
		if p.Extra != nil {
			label += " on " + p.Extra.String()
		}
	}
	kept = len(keep) > 0 && !p.Kind.Filters() // (a count(*)'s projection of no columns follows the join)
	if kept {
		cfg.Keep = keep
		label += keptLabel(keep, len(p.Out), out)
	} else {
		out = p.Out
	}
	if len(p.LeftKeys) == 0 {
		// Every pair is a candidate: one instance sees all rows of both.
		op := exec.OperatorSpec{Kind: "hash_join", Label: label, Config: exec.MustConfig(cfg), Out: out}
		return b.pass(left, b.add(op, 1, 1,
			in(left, gatherOrForward(b.par(left))), in(right, gatherOrForward(b.par(right))))), kept, nil
	}
	op := exec.OperatorSpec{Kind: "hash_join", Label: label, Config: exec.MustConfig(cfg), Out: out}
	if b.broadcast(p, left) {
		op.Label += " (right side broadcast)"
		return b.pass(left, b.add(op, b.par(left), 0,
			in(left, exec.Forward), in(right, exec.Broadcast))), kept, nil
	}
	return b.pass(left, b.add(op, b.opts.Parallelism, 0,
		in(left, exec.Hash, p.LeftKeys...), in(right, exec.Hash, p.RightKeys...))), kept, nil
}

// streamJoin plans a regular join of inputs that never end or that change
// (stream_join): both sides hash-partitioned on the join keys, each instance
// keeping its share of both sides' rows. Its output changes when an input
// does, and an outer join's also when a row's first match arrives or its
// last goes.
func (b *builder) streamJoin(p *sql.Join, left, right int) (int, error) {
	if len(p.LeftKeys) == 0 {
		return 0, sql.Errorf(sql.ErrUnsupported, 0,
			"a join over a stream that never ends or that changes needs an equality between its sides (ON a.k = b.k): without one, every row would be kept to pair with every later row of the other side")
	}
	cfg := operators.StreamJoinConfig{Kind: p.Kind.String(), LeftKeys: p.LeftKeys, RightKeys: p.RightKeys,
		Extra: p.Extra, Left: p.Left.Schema(), Right: p.Right.Schema(), TTLMillis: b.opts.StateTTL.Milliseconds(),
		StateBackend: b.opts.StateBackend}
	label := fmt.Sprintf("stream_join %s on %s", p.Kind, joinKeys(p))
	if p.Extra != nil {
		label += " and " + p.Extra.String()
	}
	if b.opts.StateTTL > 0 {
		label += " state_ttl=" + b.opts.StateTTL.String()
	}
	if b.opts.StateBackend != "" {
		label += " state_backend=" + b.opts.StateBackend
	}
	op := exec.OperatorSpec{Kind: "stream_join", Label: label, Config: exec.MustConfig(cfg), Out: p.Out}
	node := b.add(op, b.opts.Parallelism, 0, in(left, exec.Hash, p.LeftKeys...), in(right, exec.Hash, p.RightKeys...))
	b.updates[node] = b.updates[left] || b.updates[right] || p.Kind != sql.InnerJoin
	return node, nil
}

func joinKeys(p *sql.Join) string {
	l, r := p.Left.Schema(), p.Right.Schema()
	s := make([]string, len(p.LeftKeys))
	for i := range p.LeftKeys {
		s[i] = l[p.LeftKeys[i]].Name + " = " + r[p.RightKeys[i]].Name
	}
	return strings.Join(s, " and ")
}
