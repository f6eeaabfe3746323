package sql

import (
	"slices"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// pruner removes the columns a plan computes but does not use. keep names
// columns an aggregation's input keeps even so (a late-rows table's, which
// takes a windowed aggregation's late rows by name: KeepColumns).
type pruner struct {
	keep map[string]bool
}

// pruneRoot prunes a whole plan, whose every output column is needed, and makes
// sure the result has exactly p's schema, names included: removing a Project
// that only renamed columns must not rename the query's result.
func (pr *pruner) pruneRoot(p Plan) Plan {
	want := p.Schema()
	need := make([]bool, len(want))
	for i := range need {
		need[i] = true
	}
	q, m := pr.prune(p, need)
	if !isIdentityMap(m, len(q.Schema())) {
		exprs := make([]*expr.Expr, len(m))
		in := q.Schema()
		for i, j := range m {
			exprs[i] = expr.Column(j, in[j].Type, in[j].Name)
		}
		return &Project{Input: q, Exprs: exprs, Out: want}
	}
	return rename(q, want)
}

func isIdentityMap(m []int, width int) bool {
	if len(m) != width {
		return false
	}
	for i, j := range m {
		if i != j {
			return false
		}
	}
	return true
}

// rename gives p's output the names of want (same width and types): in the
// node that defines them if there is one above any Scan, else by a Project on
// top.
func rename(p Plan, want types.Schema) Plan {
	have := p.Schema()
	same := true
	for i := range have {
		same = same && have[i].Name == want[i].Name
	}
	if same {
		return p
	}
	if q, ok := renameInPlace(p, want); ok {
		return q
	}
	exprs := make([]*expr.Expr, len(have))
	for i, f := range have {
		exprs[i] = expr.Column(i, f.Type, f.Name)
	}
	return &Project{Input: p, Exprs: exprs, Out: want}
}

func renameInPlace(p Plan, want types.Schema) (Plan, bool) {
	switch n := p.(type) {
	case *Project:
		c := *n
		c.Out = want
		return &c, true
	case *Aggregate:
		c := *n
		c.Out = want
		return &c, true
	case *Unnest:
		c := *n
		c.Out = want
		return &c, true
	case *Values:
		c := *n
		c.Out = want
		return &c, true
	case *Join:
		c := *n
		c.Out = want
		return &c, true
	case *Union:
		c := *n
		c.Out = want
		return &c, true
	case *MaxOneRow:
		in, ok := renameInPlace(n.Input, want)
		return &MaxOneRow{Input: in}, ok
	case *Window:
		c := *n
		c.Out = want
		return &c, true
	case *Filter:
		in, ok := renameInPlace(n.Input, want)
		return &Filter{Input: in, Cond: n.Cond}, ok
	case *Sort:
		in, ok := renameInPlace(n.Input, want)
		return &Sort{Input: in, Keys: n.Keys}, ok
	case *Limit:
		in, ok := renameInPlace(n.Input, want)
		return &Limit{Input: in, Offset: n.Offset, Count: n.Count}, ok
	}
	return p, false
}

// prune rewrites p to compute at least the output columns marked in need (one
// flag per column of p's output). It returns the new plan and where each needed
// column went (m[i] = its new position, -1 for a column not needed); the new
// plan may keep columns that were not asked for.
func (pr *pruner) prune(p Plan, need []bool) (Plan, []int) {
	switch n := p.(type) {
	case *Scan:
		return pr.pruneScan(n, need)
	case *Values:
		m := make([]int, len(need))
		var keep []int
		for i := range need {
			m[i] = -1
			if need[i] {
				m[i] = len(keep)
				keep = append(keep, i)
			}
		}
		c := &Values{Rows: make([][]*expr.Expr, len(n.Rows)), Out: pick(n.Out, keep)}
		for r, row := range n.Rows {
			c.Rows[r] = make([]*expr.Expr, len(keep))
			for j, i := range keep {
				c.Rows[r][j] = row[i]
			}
		}
		return c, m
	case *Filter:
		inNeed := append([]bool{}, need...)
		columnSet(n.Cond, inNeed)
		in, m := pr.prune(n.Input, inNeed)
		return &Filter{Input: in, Cond: remapCols(n.Cond, m)}, m
	case *Project:
		return pr.pruneProject(n, need)
	case *Unnest:
		inNeed := append([]bool{}, need...)
		inNeed[n.Col] = true
		if n.Func == "generate_series" {
			inNeed[n.Hi], inNeed[n.Step] = true, true
		}
		in, m := pr.prune(n.Input, inNeed)
		out := append(types.Schema{}, in.Schema()...)
		out[m[n.Col]] = n.Out[n.Col]
		for i, j := range m {
			if j >= 0 {
				out[j].Name = n.Out[i].Name
			}
		}
		u := &Unnest{Input: in, Col: m[n.Col], Func: n.Func, Sep: n.Sep, Out: out}
		if n.Func == "generate_series" {
			u.Hi, u.Step, u.Outer = m[n.Hi], m[n.Step], n.Outer
		}
		return u, m
	case *Aggregate:
		return pr.pruneAggregate(n, need)
	case *Join:
		return pr.pruneJoin(n, need)
	case *MaxOneRow:
		in, m := pr.prune(n.Input, need)
		return &MaxOneRow{Input: in}, m
	case *Window:
		// Its input keeps every column: the calls read them by position.
		c := *n
		c.Input = pr.pruneRoot(n.Input)
		return &c, identity(len(need))
	case *Union:
		// Both sides keep every column, so that they line up.
		return &Union{Left: pr.pruneRoot(n.Left), Right: pr.pruneRoot(n.Right), Out: n.Out}, identity(len(need))
	case *Sort:
		inNeed := append([]bool{}, need...)
		for _, k := range n.Keys {
			inNeed[k.Col] = true
		}
		in, m := pr.prune(n.Input, inNeed)
		keys := make([]SortKey, len(n.Keys))
		for i, k := range n.Keys {
			keys[i] = k
			keys[i].Col = m[k.Col]
		}
		return &Sort{Input: in, Keys: keys}, m
	case *Limit:
		in, m := pr.prune(n.Input, need)
		c := *n
		c.Input = in
		return &c, m
	}
	return p, identity(len(need))
}

func identity(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func pick(s types.Schema, cols []int) types.Schema {
	out := make(types.Schema, len(cols))
	for i, c := range cols {
		out[i] = s[c]
	}
	return out
}

// pruneScan narrows the columns a table source reads. It keeps at least one
// column, so that batches still carry their rows to count.
func (pr *pruner) pruneScan(n *Scan, need []bool) (Plan, []int) {
	cols := n.Columns
	if cols == nil {
		cols = identity(len(n.Table.Columns))
	}
	m := make([]int, len(need))
	var keep []int
	for i, c := range cols {
		m[i] = -1
		if need[i] {
			m[i] = len(keep)
			keep = append(keep, c)
		}
	}
	if len(keep) == 0 {
		keep = cols[:1]
	}
	if len(keep) == len(n.Table.Columns) && isIdentityMap(keep, len(keep)) {
		keep = nil
	}
	return &Scan{Table: n.Table, Columns: keep}, m
}

// pruneProject keeps the needed expressions, then merges the Project into a
// Project or Values below it, or drops it when it passes its input through.
func (pr *pruner) pruneProject(n *Project, need []bool) (Plan, []int) {
	m := make([]int, len(need))
	var exprs []*expr.Expr
	var out types.Schema
	inNeed := make([]bool, len(n.Input.Schema()))
	for i, e := range n.Exprs {
		m[i] = -1
		if need[i] {
			m[i] = len(exprs)
			exprs = append(exprs, e)
			out = append(out, n.Out[i])
			columnSet(e, inNeed)
		}
	}
	in, im := pr.prune(n.Input, inNeed)
	if len(exprs) == 0 {
		// Nothing is read: the input, narrowed as far as it goes, serves (a
		// Project of no columns would leave batches with no column to count rows).
		return in, m
	}
	for i, e := range exprs {
		exprs[i] = remapCols(e, im)
	}
	switch c := in.(type) {
	case *Project:
		if canMerge(exprs, c.Exprs) {
			merged := make([]*expr.Expr, len(exprs))
			for i, e := range exprs {
				merged[i] = foldExpr(substitute(e, c.Exprs))
			}
			exprs, in = merged, c.Input
		}
	case *Values:
		v := &Values{Rows: make([][]*expr.Expr, len(c.Rows)), Out: out}
		for r, row := range c.Rows {
			v.Rows[r] = make([]*expr.Expr, len(exprs))
			for i, e := range exprs {
				v.Rows[r][i] = foldExpr(substitute(e, row))
			}
		}
		return v, m
	}
	if isIdentityProject(exprs, in) {
		// The input's columns are this Project's: m stays valid.
		return in, m
	}
	return &Project{Input: in, Exprs: exprs, Out: out}, m
}

// canMerge reports whether outer may read inner's expressions directly: each
// computed (non-column, non-literal) inner expression is read at most once, so
// merging never computes anything twice.
func canMerge(outer, inner []*expr.Expr) bool {
	uses := make([]int, len(inner))
	for _, e := range outer {
		for _, c := range e.Columns(nil) {
			uses[c]++
		}
	}
	for i, e := range inner {
		if uses[i] > 1 && e.Kind != expr.KindColumn && e.Kind != expr.KindLiteral || uses[i] > 0 && volatile(e) {
			return false
		}
	}
	return true
}

// volatile reports whether e calls something Volatile (proctime()): such a
// column is computed once, where it is, and read by what follows, which
// also lets the planner see a column of processing time (planner/window.go).
func volatile(e *expr.Expr) bool {
	if e.Volatile() {
		return true
	}
	return slices.ContainsFunc(e.Args, volatile)
}

func isIdentityProject(exprs []*expr.Expr, in Plan) bool {
	s := in.Schema()
	if len(exprs) != len(s) {
		return false
	}
	for i, e := range exprs {
		if e.Kind != expr.KindColumn || e.Col != i || e.Type != s[i].Type {
			return false
		}
	}
	return true
}

// pruneAggregate drops aggregates nobody reads. Group columns always stay: they
// define the groups.
func (pr *pruner) pruneAggregate(n *Aggregate, need []bool) (Plan, []int) {
	n = pr.keepColumns(n)
	ng := len(n.GroupBy)
	inNeed := make([]bool, len(n.Input.Schema()))
	for _, g := range n.GroupBy {
		inNeed[g] = true
	}
	for i, f := range n.Input.Schema() {
		inNeed[i] = inNeed[i] || pr.keep[f.Name]
	}
	m := make([]int, len(need))
	var aggs []AggCall
	out := append(types.Schema{}, n.Out[:ng]...)
	for i := range m {
		m[i] = -1
		if i < ng {
			m[i] = i
		}
	}
	for j, a := range n.Aggs {
		if !need[ng+j] {
			continue
		}
		m[ng+j] = ng + len(aggs)
		aggs = append(aggs, a)
		out = append(out, n.Out[ng+j])
		if a.Arg >= 0 {
			inNeed[a.Arg] = true
		}
		for _, k := range a.Order {
			inNeed[k.Col] = true
		}
	}
	in, im := pr.prune(n.Input, inNeed)
	groupBy := make([]int, ng)
	for i, g := range n.GroupBy {
		groupBy[i] = im[g]
	}
	for i := range aggs {
		if aggs[i].Arg >= 0 {
			aggs[i].Arg = im[aggs[i].Arg]
		}
		if len(aggs[i].Order) > 0 {
			order := make([]SortKey, len(aggs[i].Order))
			for j, k := range aggs[i].Order {
				order[j] = k
				order[j].Col = im[k.Col]
			}
			aggs[i].Order = order
		}
	}
	return &Aggregate{Input: in, GroupBy: groupBy, Aggs: aggs, Out: out}, m
}

// keepColumns returns n whose input, when it is the Project of the
// aggregation's keys and arguments, also passes on the columns of its own
// input that pr keeps (added at its end, so no position n reads moves).
func (pr *pruner) keepColumns(n *Aggregate) *Aggregate {
	proj, ok := n.Input.(*Project)
	if len(pr.keep) == 0 || !ok {
		return n
	}
	have := map[string]bool{}
	for _, f := range proj.Out {
		have[f.Name] = true
	}
	c := *proj
	for j, f := range proj.Input.Schema() {
		if pr.keep[f.Name] && !have[f.Name] {
			c.Exprs = append(slices.Clip(c.Exprs), expr.Column(j, f.Type, f.Name))
			c.Out = append(slices.Clip(c.Out), f)
			have[f.Name] = true
		}
	}
	a := *n
	a.Input = &c
	return &a
}

func (pr *pruner) pruneJoin(n *Join, need []bool) (Plan, []int) {
	nl := len(n.Left.Schema())
	needL := append([]bool{}, need[:nl]...)
	needR := make([]bool, len(n.Right.Schema()))
	copy(needR, need[nl:])
	for _, k := range n.LeftKeys {
		needL[k] = true
	}
	for _, k := range n.RightKeys {
		needR[k] = true
	}
	if n.Extra != nil {
		for _, c := range n.Extra.Columns(nil) {
			if c < nl {
				needL[c] = true
			} else {
				needR[c-nl] = true
			}
		}
	}
	l, lm := pr.prune(n.Left, needL)
	r, rm := pr.prune(n.Right, needR)
	newNL := len(l.Schema())
	// m maps the pairs' columns (left, right), which Extra reads; the
	// output's are its first len(need).
	m := make([]int, nl+len(needR))
	for i := range m {
		switch {
		case i < nl:
			m[i] = lm[i]
		case rm[i-nl] >= 0:
			m[i] = newNL + rm[i-nl]
		default:
			m[i] = -1
		}
	}
	c := &Join{Left: l, Right: r, Kind: n.Kind, Out: append(append(types.Schema{}, l.Schema()...), r.Schema()...)}
	if n.Kind.Filters() {
		c.Out = append(types.Schema{}, l.Schema()...)
	}
	for i := range n.LeftKeys {
		c.LeftKeys = append(c.LeftKeys, lm[n.LeftKeys[i]])
		c.RightKeys = append(c.RightKeys, rm[n.RightKeys[i]])
	}
	if n.Extra != nil {
		c.Extra = remapCols(n.Extra, m)
	}
	// Keep the join's own column names (a Join's Out may differ from its inputs'
	// schemas only in names, which the root restores anyway).
	return narrowJoin(c, need, m[:len(need)])
}

// narrowJoin puts a projection over join c of the columns asked for (need,
// with m where they are in c's output) when c also outputs columns only it
// reads (its keys, Extra's): the planner then has the join gather only those
// asked for. A semi or anti join outputs its left side as it is.
func narrowJoin(c *Join, need []bool, m []int) (Plan, []int) {
	if c.Kind.Filters() {
		return c, m
	}
	used := make([]bool, len(c.Out))
	for i, j := range m {
		if need[i] && j >= 0 {
			used[j] = true
		}
	}
	var exprs []*expr.Expr
	var out types.Schema
	at := make([]int, len(c.Out))
	for j, u := range used {
		at[j] = -1
		if u {
			at[j] = len(exprs)
			exprs = append(exprs, expr.Column(j, c.Out[j].Type, c.Out[j].Name))
			out = append(out, c.Out[j])
		}
	}
	if len(exprs) == len(c.Out) {
		return c, m
	}
	nm := make([]int, len(m))
	for i, j := range m {
		nm[i] = -1
		if need[i] && j >= 0 {
			nm[i] = at[j]
		}
	}
	return &Project{Input: c, Exprs: exprs, Out: out}, nm
}
