package planner

import (
	"fmt"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// Windows of event time: a GROUP BY whose keys include the end of a window
// (tumble_end(ts, size), sql/dialect_window.go) over a column with a
// watermark (WATERMARK FOR ts in its table's DDL) runs as a window_agg, which
// emits each window's rows once, when the watermark passes its end, and
// forgets the window: its output is append-only. Without a watermark the same
// GROUP BY over a stream emits updates, as any continuous GROUP BY does. A
// batch query over a table with a watermark (a bounded Nexmark table, say)
// runs the same window operators, whose windows all close at the end of the
// input: the answer is the batch one, by the streaming path.

// windowEndKey returns the position among p's GROUP BY keys of the first that
// is a window's end over a column with a watermark, or -1.
func windowEndKey(p *sql.Aggregate) int {
	for k, c := range p.GroupBy {
		if windowEnd(p.Input, c) {
			return k
		}
	}
	return -1
}

// windowEnd reports whether column col of p's output is the end of a window
// of a column with a watermark: tumble_end(ts, size), a window's start plus a
// constant (a hopping window's), or a series of window ends from
// cumulate_first_end(ts, ...) (a cumulating window's).
func windowEnd(p sql.Plan, col int) bool {
	switch p := p.(type) {
	case *sql.Project:
		e := p.Exprs[col]
		switch {
		case e.Kind == expr.KindColumn:
			return windowEnd(p.Input, e.Col)
		case windowCall(p.Input, e, "tumble_end"):
			return true
		case e.Kind == expr.KindCall && e.Func == "$add_micros" && len(e.Args) == 2 && e.Args[0].Kind == expr.KindColumn &&
			e.Args[1].Kind == expr.KindLiteral && !e.Args[1].Value.Null && e.Args[1].Value.Int > 0:
			return windowStart(p.Input, e.Args[0].Col)
		}
	case *sql.Filter:
		return windowEnd(p.Input, col)
	case *sql.Unnest:
		if col != p.Col {
			return windowEnd(p.Input, col)
		}
		return p.Func == "generate_series" && seriesOf(p, "cumulate_first_end")
	case *sql.Aggregate:
		// A window aggregation's rows of a window come out before the
		// watermark that closed it, which it passes on.
		return col < len(p.GroupBy) && windowEnd(p.Input, p.GroupBy[col])
	case *sql.Join:
		if n := len(p.Left.Schema()); col >= n {
			return windowEnd(p.Right, col-n)
		}
		return windowEnd(p.Left, col)
	}
	return false
}

// windowStart reports whether column col of p's output is the start of a
// window of a column with a watermark: tumble_start(ts, size), or a series of
// window starts from hop_first(ts, ...).
func windowStart(p sql.Plan, col int) bool {
	switch p := p.(type) {
	case *sql.Project:
		e := p.Exprs[col]
		if e.Kind == expr.KindColumn {
			return windowStart(p.Input, e.Col)
		}
		return windowCall(p.Input, e, "tumble_start")
	case *sql.Filter:
		return windowStart(p.Input, col)
	case *sql.Unnest:
		if col != p.Col {
			return windowStart(p.Input, col)
		}
		return p.Func == "generate_series" && seriesOf(p, "hop_first")
	case *sql.Aggregate:
		return col < len(p.GroupBy) && windowStart(p.Input, p.GroupBy[col])
	}
	return false
}

// seriesOf reports whether the series of u starts at fn(ts, ...), ts a
// column with a watermark.
func seriesOf(u *sql.Unnest, fn string) bool {
	in, ok := u.Input.(*sql.Project)
	return ok && windowCall(in.Input, in.Exprs[u.Col], fn)
}

// windowCall reports whether e is fn(ts, ...) with ts a column of input with
// a watermark.
func windowCall(input sql.Plan, e *expr.Expr, fn string) bool {
	return e.Kind == expr.KindCall && e.Func == fn && len(e.Args) >= 2 &&
		e.Args[0].Kind == expr.KindColumn && eventTime(input, e.Args[0].Col)
}

// eventTime reports whether column col of p's output is a table's column
// with a watermark, as read, or a column of PROCTIME() (processing time).
func eventTime(p sql.Plan, col int) bool {
	switch p := p.(type) {
	case *sql.Scan:
		wm := p.Table.Watermark
		if wm == nil || p.Table.IsView() || p.Table.IsSystem() {
			return false
		}
		c := col
		if p.Columns != nil {
			c = p.Columns[col]
		}
		return p.Table.Columns[c].Name == wm.Column
	case *sql.Project:
		switch e := p.Exprs[col]; {
		case e.Kind == expr.KindColumn:
			return eventTime(p.Input, e.Col)
		case e.Volatile(): // PROCTIME(), whose watermark is the wall clock
			return true
		}
	case *sql.Filter:
		return eventTime(p.Input, col)
	case *sql.Unnest:
		return col != p.Col && eventTime(p.Input, col)
	case *sql.Join: // an inner interval join's times keep a watermark, held back by its bounds
		if _, ok := intervalBounds(p); ok && p.Kind == sql.InnerJoin {
			if nl := len(p.Left.Schema()); col >= nl {
				return eventTime(p.Right, col-nl)
			}
			return eventTime(p.Left, col)
		}
	case *sql.Aggregate:
		// A window aggregate's window end, whose rows go out before the
		// watermark passing it (Flink's window_time, a microsecond earlier,
		// is the time attribute there).
		end := windowEndKey(p)
		return end >= 0 && col == end
	case *sql.Window: // over a stream an over_agg, which forwards the watermark
		return col < len(p.Input.Schema()) && eventTime(p.Input, col)
	}
	return false
}

// windowAggregate plans p, whose GROUP BY key end is a window's end, as
// window_agg operators: partial ones beside the input, then final ones after
// a hash exchange, or one complete phase where a partial one cannot help.
func (b *builder) windowAggregate(p *sql.Aggregate, from, end int) (int, error) {
	inSchema := p.Input.Schema()
	aggs := make([]operators.AggSpec, len(p.Aggs))
	for i, a := range p.Aggs {
		if a.Distinct || a.Func == "string_agg" {
			return 0, sql.Errorf(sql.ErrUnsupported, 0, "%s in a window over a stream is not supported yet", aggName(a))
		}
		aggs[i] = operators.AggSpec{Func: a.Func, Arg: a.Arg, Type: a.Type, Sep: a.Sep}
	}
	var late *operators.LateConfig
	spec := func(phase operators.AggPhase, group []int, out, sch types.Schema) exec.OperatorSpec {
		label := fmt.Sprintf("window_agg %s group=%s aggs=%s end=%s", phase, colNames(sch, group), aggList(p.Aggs, inSchema), sch[group[end]].Name)
		cfg := operators.WindowAggConfig{End: end, Agg: operators.HashAggConfig{GroupBy: group, Aggs: aggs, Phase: phase,
			Emit: operators.AggEmitFinal, MemoryLimit: b.opts.WorkMem}}
		if phase != operators.AggPartial && b.opts.StateBackend != "" {
			// A partial phase is bounded already: past its budget it sends
			// what it holds on (window_agg_disk.go).
			cfg.Agg.StateBackend = b.opts.StateBackend
			label += " state_backend=" + b.opts.StateBackend
		}
		if phase != operators.AggFinal && late != nil {
			l := *late
			l.Operator = label // the phase's, as EXPLAIN names it
			cfg.Late = &l
		}
		return exec.OperatorSpec{Kind: "window_agg", Label: label, Config: exec.MustConfig(cfg), Out: out}
	}
	var err error
	label := fmt.Sprintf("window_agg group=%s aggs=%s end=%s", colNames(inSchema, p.GroupBy), aggList(p.Aggs, inSchema), inSchema[p.GroupBy[end]].Name)
	if late, err = b.lateConfig(from, inSchema, label); err != nil {
		return 0, err
	}
	var node int
	if par := b.par(from); par == 1 {
		node = b.add(spec(operators.AggComplete, p.GroupBy, p.Out, inSchema), 1, 0, in(from, exec.Forward))
		b.lateNode(node, late)
	} else {
		groupCols := make(types.Schema, len(p.GroupBy))
		finalGroup := make([]int, len(p.GroupBy))
		for i, c := range p.GroupBy {
			groupCols[i] = inSchema[c]
			finalGroup[i] = i
		}
		partialOut := operators.PartialSchema(groupCols, aggs, inSchema)
		partial := b.add(spec(operators.AggPartial, p.GroupBy, partialOut, inSchema), par, 0, in(from, exec.Forward))
		b.lateNode(partial, late)
		node = b.add(spec(operators.AggFinal, finalGroup, p.Out, partialOut), b.opts.Parallelism, 0, in(partial, exec.Hash, finalGroup...))
	}
	b.updates[node] = false // each window's rows once: append-only
	return node, nil
}

func aggName(a sql.AggCall) string {
	if a.Distinct {
		return a.Func + "(DISTINCT)"
	}
	return a.Func
}

// windowJoinEnds returns the positions in the join's inputs of an equality
// of its condition between both sides' window ends.
func windowJoinEnds(p *sql.Join) (left, right int, ok bool) {
	if p.Kind.Filters() {
		return 0, 0, false
	}
	for i, l := range p.LeftKeys {
		if windowEnd(p.Left, l) && windowEnd(p.Right, p.RightKeys[i]) {
			return l, p.RightKeys[i], true
		}
	}
	return 0, 0, false
}

// windowJoin plans a join of two windowed inputs on their windows' ends as a
// window_join: the window's rows of both sides joined when the watermark
// passes its end, once.
func (b *builder) windowJoin(p *sql.Join, left, right, leftEnd, rightEnd int) int {
	cfg := operators.WindowJoinConfig{LeftEnd: leftEnd, RightEnd: rightEnd, Join: operators.JoinConfig{Kind: p.Kind.String(),
		LeftKeys: p.LeftKeys, RightKeys: p.RightKeys, Extra: p.Extra, Left: p.Left.Schema(), Right: p.Right.Schema()},
		StateBackend: b.opts.StateBackend}
	label := fmt.Sprintf("window_join %s on %s", p.Kind, joinKeys(p))
	if p.Extra != nil {
		label += " and " + p.Extra.String()
	}
	if b.opts.StateBackend != "" {
		label += " state_backend=" + b.opts.StateBackend
	}
	op := exec.OperatorSpec{Kind: "window_join", Label: label, Config: exec.MustConfig(cfg), Out: p.Out}
	node := b.add(op, b.opts.Parallelism, 0, in(left, exec.Hash, p.LeftKeys...), in(right, exec.Hash, p.RightKeys...))
	b.updates[node] = false
	return node
}

// sessionKeys returns the positions among p's GROUP BY keys of a session
// window's start and end (session_start(ts, gap) and session_end(ts, gap) of
// one ts and gap, sql/dialect_window.go).
func sessionKeys(p *sql.Aggregate) (start, end int, ok bool) {
	start, end = -1, -1
	var ts *expr.Expr
	for k, c := range p.GroupBy {
		e := sessionCall(p.Input, c)
		switch {
		case e == nil:
		case e.Func == "session_start" && start < 0 && (ts == nil || sameArgs(ts, e)):
			start, ts = k, e
		case e.Func == "session_end" && end < 0 && (ts == nil || sameArgs(ts, e)):
			end, ts = k, e
		}
	}
	return start, end, start >= 0 && end >= 0
}

func sameArgs(a, b *expr.Expr) bool {
	return a.Args[0].String() == b.Args[0].String() && a.Args[1].String() == b.Args[1].String()
}

// sessionCall returns the session_start or session_end call that column col
// of p's output is, or nil.
func sessionCall(p sql.Plan, col int) *expr.Expr {
	switch p := p.(type) {
	case *sql.Project:
		e := p.Exprs[col]
		if e.Kind == expr.KindColumn {
			return sessionCall(p.Input, e.Col)
		}
		if e.Kind == expr.KindCall && (e.Func == "session_start" || e.Func == "session_end") {
			return e
		}
	case *sql.Filter:
		return sessionCall(p.Input, col)
	}
	return nil
}

// sessionAggregate plans p, grouped by a session window (its keys start and
// end), as a session_agg after a hash exchange on the other keys; in batch
// queries too, where every session closes at the end of the input. Over a
// stream without a watermark the sessions would never close: refused.
func (b *builder) sessionAggregate(p *sql.Aggregate, from, start, end int) (int, error) {
	if b.streaming && (!sessionOverEventTime(p.Input, p.GroupBy[start]) || b.updates[from]) {
		return 0, sql.Errorf(sql.ErrUnsupported, 0, "a SESSION window over a stream needs a watermark on its time column (WATERMARK FOR ts AS ... in the table's DDL), and rows that are only inserted")
	}
	inSchema := p.Input.Schema()
	aggs := make([]operators.AggSpec, len(p.Aggs))
	for i, a := range p.Aggs {
		aggs[i] = operators.AggSpec{Func: a.Func, Arg: a.Arg, Distinct: a.Distinct, Type: a.Type, Sep: a.Sep}
		for _, k := range a.Order {
			aggs[i].Order = append(aggs[i].Order, operators.SortKeySpec{Col: k.Col, Desc: k.Desc, NullsFirst: k.NullsFirst})
		}
	}
	var keys []int
	for k, c := range p.GroupBy {
		if k != start && k != end {
			keys = append(keys, c)
		}
	}
	cfg := operators.SessionAggConfig{Keys: keys, Start: p.GroupBy[start], End: p.GroupBy[end],
		Agg: operators.HashAggConfig{GroupBy: p.GroupBy, Aggs: aggs, Phase: operators.AggComplete, Emit: operators.AggEmitFinal}}
	label := fmt.Sprintf("session_agg group=%s aggs=%s", colNames(inSchema, p.GroupBy), aggList(p.Aggs, inSchema))
	if b.streaming && b.opts.StateBackend != "" {
		cfg.StateBackend = b.opts.StateBackend
		label += " state_backend=" + b.opts.StateBackend
	}
	var err error
	if cfg.Late, err = b.lateConfig(from, inSchema, label); err != nil {
		return 0, err
	}
	op := exec.OperatorSpec{Kind: "session_agg", Label: label, Config: exec.MustConfig(cfg), Out: p.Out}
	var node int
	if len(keys) == 0 {
		node = b.add(op, 1, 1, in(from, gatherOrForward(b.par(from))))
	} else {
		node = b.add(op, b.opts.Parallelism, 0, in(from, exec.Hash, keys...))
	}
	b.lateNode(node, cfg.Late)
	b.updates[node] = false
	return node, nil
}

// sessionOverEventTime reports whether column col of p's output is
// session_start(ts, gap) of a column ts with a watermark.
func sessionOverEventTime(p sql.Plan, col int) bool {
	switch p := p.(type) {
	case *sql.Project:
		e := p.Exprs[col]
		if e.Kind == expr.KindColumn {
			return sessionOverEventTime(p.Input, e.Col)
		}
		return windowCall(p.Input, e, "session_start")
	case *sql.Filter:
		return sessionOverEventTime(p.Input, col)
	}
	return false
}
