package planner

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

// Top-N, as Flink SQL and RisingWave read it:
//
//	SELECT ... FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY x DESC) AS rn FROM s)
//	WHERE rn <= N
//
// A filter bounding the row number of a window of one ROW_NUMBER() (or
// RANK()) with an ORDER BY (rn <= N, rn < N, rn = N, rn BETWEEN M AND N),
// the window computed over its input and nothing else, runs as a topn
// operator, hash-partitioned by the PARTITION BY keys, which keeps each
// partition's top rows instead of numbering every row. Over a stream it
// emits changes: rows entering the top as inserts, rows leaving it as
// deletes, and, when the row number is a column of the result, a row whose
// number changed as both (Flink's retract mode). Over an input that retracts
// it keeps every row, to replace a deleted top row with the next. A PARTITION
// BY that includes a window's end (of a window table function, or of a window
// aggregation) over an append-only input runs as window_topn instead: each
// window's top once, when the watermark closes it, append-only.
// Deduplication keeping the first row (rn = 1, ORDER BY one time column
// ascending, an append-only input) is append-only too: by a PROCTIME()
// column a later row never displaces the first; by a column with a
// watermark each partition's first row goes out when the watermark passes
// it, and later rows, or late ones, are ignored (operators/topn_first.go).
// ORDER BY ... LIMIT n [OFFSET m] over a stream is a Top-N of the whole
// stream (Flink's), its rows m+1 to m+n.
//
// Bounded queries keep the window operator and a filter: measured on
// Nexmark q19 and q18 over 2,000,000 events (hummer serve, parallelism
// auto), a bounded topn took about 40% more CPU time than them (q19 1.9 s
// against 1.36 s, q18 1.95 s against 1.5 s): it encodes each row that
// enters a top into its row table and decodes it back, where the window
// operator sorts each partition's rows once in place.

// topN is a Top-N found in a plan: Window w's row number kept between Lo and
// Hi, and the other conjuncts of the filter, over w's output.
type topN struct {
	w      *sql.Window
	lo, hi int64
	rest   []*expr.Expr
}

// rn returns the position of the row number in w's output.
func (t topN) rn() int { return len(t.w.Input.Schema()) }

// topNOf recognises a Top-N in filter f.
func topNOf(f *sql.Filter) (topN, bool) {
	w, ok := f.Input.(*sql.Window)
	if !ok || len(w.Funcs) != 1 || w.Funcs[0].Func != "row_number" && w.Funcs[0].Func != "rank" || len(w.Order) == 0 {
		return topN{}, false
	}
	t := topN{w: w, lo: 1, hi: -1}
	rn := t.rn()
	for _, c := range conjuncts(f.Cond) {
		lo, hi, ok := rowNumberBound(c, rn)
		if !ok {
			t.rest = append(t.rest, c)
			continue
		}
		t.lo = max(t.lo, lo)
		if hi >= 0 && (t.hi < 0 || hi < t.hi) {
			t.hi = hi
		}
	}
	return t, t.hi >= t.lo
}

// rowNumberBound recognises c as a bound on column rn (a comparison with an
// integer literal): the least and greatest row numbers it admits, hi -1 for
// none.
func rowNumberBound(c *expr.Expr, rn int) (lo, hi int64, ok bool) {
	if c.Kind != expr.KindCall || len(c.Args) != 2 {
		return 0, 0, false
	}
	l, r, op := c.Args[0], c.Args[1], c.Func
	if isLiteral(l) {
		l, r = r, l
		switch op {
		case "<":
			op = ">"
		case "<=":
			op = ">="
		case ">":
			op = "<"
		case ">=":
			op = "<="
		}
	}
	if l.Kind != expr.KindColumn || l.Col != rn || !isLiteral(r) || r.Type.Base() != types.Int64Type {
		return 0, 0, false
	}
	v := r.Value.Int
	switch op {
	case "<=":
		return 1, max(v, 0), true
	case "<":
		return 1, max(v-1, 0), true
	case "=":
		return max(v, 1), max(v, 0), true
	case ">=":
		return max(v, 1), -1, true
	case ">":
		return max(v+1, 1), -1, true
	}
	return 0, 0, false
}

// topNNode plans Top-N t over a stream: rank says the row number is a column
// of its output (else the output is the window's input's columns).
func (b *builder) topNNode(t topN, rank bool) (int, error) {
	from, err := b.build(t.w.Input)
	if err != nil {
		return 0, err
	}
	inSchema := t.w.Input.Schema()
	cfg := operators.TopNConfig{Partition: t.w.Partition, Lo: t.lo, Hi: t.hi, Rank: rank, Retracts: b.updates[from]}
	fn := "rows"
	if t.w.Funcs[0].Func == "rank" {
		cfg.Func, fn = "rank", "ranks"
	}
	var order []string
	for _, k := range t.w.Order {
		cfg.Order = append(cfg.Order, operators.SortKeySpec{Col: k.Col, Desc: k.Desc, NullsFirst: k.NullsFirst})
		dir := ""
		if k.Desc {
			dir = " desc"
		}
		order = append(order, inSchema[k.Col].Name+dir)
	}
	out := slices.Clone(inSchema)
	if rank {
		out = append(out, t.w.Out[t.rn()])
	}
	label := fmt.Sprintf("partition=%s order=%s %s %d to %d", colNames(inSchema, t.w.Partition), strings.Join(order, ","), fn, t.lo, t.hi)
	if !rank {
		label += " (no " + strings.ReplaceAll(t.w.Funcs[0].Func, "_", " ") + ")"
	}
	end := -1
	for _, c := range t.w.Partition {
		if !b.updates[from] && windowEnd(t.w.Input, c) {
			end = c
			break
		}
	}
	// rn = 1 by a column with a watermark ascending: the first row of each
	// partition goes out once the watermark passes it.
	first := end < 0 && cfg.Func == "" && t.lo == 1 && t.hi == 1 && !cfg.Retracts && len(t.w.Order) == 1 && !t.w.Order[0].Desc &&
		eventTime(t.w.Input, t.w.Order[0].Col) && !procTime(t.w.Input, t.w.Order[0].Col)
	var op exec.OperatorSpec
	var lateCfg *operators.LateConfig
	switch {
	case first:
		cfg.First = true
		cfg.StateBackend = b.opts.StateBackend
		flabel := "topn " + label + " (first rows, at the watermark)"
		late, err := b.lateConfig(from, inSchema, flabel)
		if err != nil {
			return 0, err
		}
		cfg.Late, lateCfg = late, late
		if b.opts.StateBackend != "" {
			flabel += " state_backend=" + b.opts.StateBackend
		}
		op = exec.OperatorSpec{Kind: "topn", Label: flabel, Config: exec.MustConfig(cfg), Out: out}
	case end >= 0:
		wlabel := "window_topn " + label + " end=" + inSchema[end].Name
		if b.opts.StateBackend != "" {
			wlabel += " state_backend=" + b.opts.StateBackend
		}
		late, err := b.lateConfig(from, inSchema, wlabel)
		if err != nil {
			return 0, err
		}
		lateCfg = late
		op = exec.OperatorSpec{Kind: "window_topn", Label: wlabel,
			Config: exec.MustConfig(operators.WindowTopNConfig{TopN: cfg, End: end, Late: late, StateBackend: b.opts.StateBackend}), Out: out}
	default:
		if cfg.Retracts {
			label += " (keeps every row: its input retracts)"
		}
		cfg.StateBackend = b.opts.StateBackend
		if b.opts.StateBackend != "" {
			label += " state_backend=" + b.opts.StateBackend
		}
		op = exec.OperatorSpec{Kind: "topn", Label: "topn " + label, Config: exec.MustConfig(cfg), Out: out}
	}
	node := b.partitioned(op, from, t.w.Partition)
	b.lateNode(node, lateCfg)
	// Only a window's rows at its close, or the first row by arrival, never
	// change.
	b.updates[node] = end < 0 && !first && !(cfg.Func == "" && t.lo == 1 && t.hi == 1 && !cfg.Retracts && len(t.w.Order) == 1 &&
		!t.w.Order[0].Desc && procTime(t.w.Input, t.w.Order[0].Col))
	if len(t.rest) > 0 {
		cond := t.rest[0]
		if len(t.rest) > 1 {
			cond = expr.Call("and", types.BoolType, t.rest...)
		}
		node = b.pass(node, b.forward(node, "filter", "filter "+cond.String(), operators.FilterConfig{Cond: cond}, out))
	}
	return node, nil
}

// streamTopN returns the Top-N of filter f when f is one over a stream,
// with whether the row number must be a column of its output besides used,
// which says a consumer of f reads it.
func (b *builder) streamTopN(f *sql.Filter, used bool) (topN, bool, bool) {
	if !b.streaming {
		return topN{}, false, false
	}
	t, ok := topNOf(f)
	if !ok {
		return topN{}, false, false
	}
	rank := used
	for _, c := range t.rest {
		rank = rank || slices.Contains(c.Columns(nil), t.rn())
	}
	return t, rank, true
}

// procTime reports whether column col of p's output is a PROCTIME() column.
func procTime(p sql.Plan, col int) bool {
	switch p := p.(type) {
	case *sql.Project:
		switch e := p.Exprs[col]; {
		case e.Kind == expr.KindColumn:
			return procTime(p.Input, e.Col)
		case e.Volatile():
			return true
		}
	case *sql.Filter:
		return procTime(p.Input, col)
	}
	return false
}

// projectTopN returns the Top-N of a stream right under projection p, and
// whether p or the rest of the filter reads the row number.
func (b *builder) projectTopN(p *sql.Project) (topN, bool, bool) {
	f, ok := p.Input.(*sql.Filter)
	if !ok {
		return topN{}, false, false
	}
	rn := len(f.Schema()) - 1
	used := false
	for _, e := range p.Exprs {
		used = used || slices.Contains(e.Columns(nil), rn)
	}
	return b.streamTopN(f, used)
}

// sortLimitTopN returns, for ORDER BY ... LIMIT n [OFFSET m] over a stream,
// the Top-N of the whole input that keeps its rows m+1 to m+n (Flink's), as
// a ROW_NUMBER() over no partition whose number is not selected.
func (b *builder) sortLimitTopN(l *sql.Limit) (topN, bool) {
	s, ok := l.Input.(*sql.Sort)
	if !b.streaming || !ok || l.Count < 1 || len(s.Keys) == 0 {
		return topN{}, false
	}
	in := s.Input.Schema()
	w := &sql.Window{Input: s.Input, Order: s.Keys,
		Funcs: []sql.WindowCall{{Func: "row_number", Default: -1, Type: types.Int64Type}},
		Out:   append(slices.Clone(in), types.Field{Name: "row_number", Type: types.Int64Type})}
	return topN{w: w, lo: l.Offset + 1, hi: l.Offset + l.Count}, true
}

// streamTopNNode plans p when it is a Top-N over a stream: a filter of a
// ROW_NUMBER(), or ORDER BY ... LIMIT; it refuses any other window function
// over a stream.
func (b *builder) streamTopNNode(p sql.Plan) (int, bool, error) {
	switch p := p.(type) {
	case *sql.Window:
		if b.streaming {
			node, err := b.overAgg(p)
			return node, true, err
		}
	case *sql.Filter:
		if t, rank, ok := b.streamTopN(p, true); ok {
			node, err := b.topNNode(t, rank)
			return node, true, err
		}
	case *sql.Limit:
		if t, ok := b.sortLimitTopN(p); ok {
			node, err := b.topNNode(t, false)
			return node, true, err
		}
	}
	return 0, false, nil
}

// projectInput plans the input of projection p: a Top-N over a stream
// without the row number when p does not read it.
func (b *builder) projectInput(p *sql.Project) (int, error) {
	if t, rank, ok := b.projectTopN(p); ok {
		return b.topNNode(t, rank)
	}
	return b.build(p.Input)
}

// errWindowOverStream is the error of a window function over a stream that
// is no Top-N.
func errWindowOverStream() error {
	return sql.Errorf(sql.ErrUnsupported, 0,
		"window functions need the end of their input, and this query reads a stream that never ends; "+
			"over a stream only a Top-N runs: ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn in a subquery whose outer WHERE bounds rn (rn <= N); "+
			"or an OVER aggregation: COUNT, SUM, AVG, MIN or MAX OVER (PARTITION BY ... ORDER BY a time column with a watermark, ascending, ROWS or RANGE BETWEEN ... PRECEDING AND CURRENT ROW); "+
			"otherwise keep the result in a view and query it")
}

// errSortOverStream is the error of ORDER BY or LIMIT over a stream that is
// no Top-N.
func errSortOverStream() error {
	return sql.Errorf(sql.ErrUnsupported, 0,
		"ORDER BY without LIMIT, and LIMIT without ORDER BY, need the end of their input, and this query reads a stream that never ends; "+
			"ORDER BY ... LIMIT n keeps a top n of the stream, or keep the result in a view (CREATE VIEW v AS SELECT ...) and SELECT ... FROM v ORDER BY ... LIMIT ...")
}
