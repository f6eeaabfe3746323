package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// Options are the session settings that shape a physical plan.
type Options struct {
	// Parallelism is the number of parallel instances of every vertex that can
	// run in parallel (SET parallelism = N), or exec.AutoParallelism to let the
	// JobManager choose (the free slots) when the job is submitted.
	Parallelism int
	// Sink, when set, receives the query's rows (INSERT INTO t SELECT ...);
	// otherwise they go to the client ("result").
	Sink *exec.ConnectorSpec
	// Upsert says the sink takes updates, keyed by Sink.Key; otherwise it is
	// append-only and a query producing updates is refused.
	Upsert bool
	// View makes the rows go to a "view" operator that keeps them (a
	// materialised view's job) instead of to the client.
	View bool
	// Unbounded reports whether a connector's source never ends. A query
	// reading one is continuous: its aggregations emit updates as they go.
	Unbounded func(connector, url string) bool
	// Snapshot returns the current rows of a materialised view, or of a
	// system table (sql.SystemTable), as an Arrow IPC stream
	// (operators.ViewState.Snapshot); a query over one reads them.
	Snapshot func(view string) ([]byte, error)
	// Changelog reports whether a keyed table of a connector holds upserts
	// and deletes by its key (an upsert Kafka topic), to be read through an
	// upsert operator; nil for none.
	Changelog func(connector string) bool
	// Retracts reports whether a connector's source itself emits deletes
	// of rows it emitted before (a stored table's changes, which a view
	// follows): what reads it must take retractions.
	Retracts func(connector string) bool
	// SourceWatermarks reports whether a connector's source keeps the
	// watermarks of a table with a WATERMARK itself (Kafka's, per partition):
	// it gets the expression (exec.ConnectorSpec.Watermark), and the
	// watermark operator after it passes its watermarks on.
	SourceWatermarks func(connector string) bool
	// Rows estimates the rows a plan yields (sql.EstimateRows over the
	// catalog), high where it guesses when upper; nil, or ok false, for
	// unknown. A join whose build side is estimated small copies it to every
	// instance instead of repartitioning both sides (broadcastRows); one
	// whose left side is estimated much smaller builds on it (buildLeft).
	Rows func(p sql.Plan, upper bool) (rows float64, ok bool)
	// StateTTL, when positive, bounds by idle time (processing time) the
	// rows each side of a stream join keeps (SET state_ttl), as Flink's
	// table.exec.state.ttl: a row not written for that long is dropped, and
	// answers over keys idle that long are no longer exact.
	StateTTL time.Duration
	// StateBackend is where stateful operators keep their state (SET
	// state_backend: "memory", "disk"; "" the TaskManagers' default).
	StateBackend string
	// Late, when set, is the job's late-rows table (SET late_rows_table).
	Late *LateRows
	// Lookup describes the rows a stored table's source reads by its
	// primary key for the filter it is handed (exec.ConnectorSpec.Filter),
	// for the source's label in EXPLAIN: "" for a scan of every row; nil for
	// none.
	Lookup func(spec exec.ConnectorSpec) string
	// WorkMem bounds the memory of each aggregation's groups, sort's rows
	// and join's build side before it spills (SET work_mem, in bytes); 0
	// leaves it to the TaskManager's default.
	WorkMem int64
}

// Build turns an optimised logical plan into a StreamGraph whose last node
// delivers the query's rows to the client ("result" sink).
//
// The physical choices: sources and the row-at-a-time operators after them run at
// the session's parallelism; a GROUP BY becomes a local (partial) aggregation,
// fused behind the operators that feed it, then a hash exchange on the group keys
// into the final aggregation; joins hash-partition both inputs on their keys; a
// sort or limit over parallel input runs a local top-N per instance first, then
// gathers into one instance.
func Build(p sql.Plan, opts Options) (*StreamGraph, error) {
	if opts.Parallelism < 0 {
		opts.Parallelism = exec.AutoParallelism
	}
	b := &builder{g: &StreamGraph{}, opts: opts, streaming: Continuous(p, opts.Unbounded), updates: map[int]bool{}}
	b.findShared(p)
	root, err := b.build(p)
	if err != nil {
		return nil, err
	}
	b.addLateSink()
	last := exec.OperatorSpec{Kind: "result", Label: "result", Config: exec.MustConfig(operators.ResultConfig{}), Out: p.Schema()}
	edge := in(root, exec.Forward)
	if opts.Sink != nil {
		last = exec.OperatorSpec{Kind: "sink", Label: fmt.Sprintf("sink [%s] %s", opts.Sink.Connector, opts.Sink.URL),
			Config: exec.MustConfig(opts.Sink), Out: p.Schema()}
		switch {
		case opts.Upsert && len(opts.Sink.Key) > 0:
			// One key's changes must stay in order: through one sink instance.
			last.Label += " upsert key=" + colNames(p.Schema(), opts.Sink.Key)
			if b.par(root) != 1 {
				edge = in(root, exec.Hash, opts.Sink.Key...)
			}
		case b.updates[root]:
			return nil, sql.Errorf(sql.ErrUnsupported, 0,
				"the query produces updates (an aggregation over a stream changes its rows as input arrives), but the table it writes is append-only; "+
					"write it to a table with a PRIMARY KEY (an upsert sink, such as ENGINE=kafka with format=json), or keep the result in a view: CREATE VIEW v AS SELECT ...")
		}
	}
	if opts.View {
		last = exec.OperatorSpec{Kind: "view", Label: "view", Out: p.Schema()}
		if opts.StateBackend != "" {
			last.Label += " state_backend=" + opts.StateBackend
			last.Config = exec.MustConfig(operators.ViewConfig{StateBackend: opts.StateBackend})
		}
		b.add(last, 1, 1, in(root, gatherOrForward(b.par(root))))
		return b.g, nil
	}
	b.add(last, b.par(root), 0, edge)
	return b.g, nil
}

// Continuous reports whether p reads a source that never ends.
func Continuous(p sql.Plan, unbounded func(connector, url string) bool) bool {
	if unbounded == nil {
		return false
	}
	if scan, ok := p.(*sql.Scan); ok && unbounded(scan.Table.Engine, scan.Table.Connection) {
		return true
	}
	for _, in := range p.Inputs() {
		if Continuous(in, unbounded) {
			return true
		}
	}
	return false
}

type builder struct {
	g    *StreamGraph
	opts Options
	// streaming is set for a continuous query (one reading an unbounded source).
	streaming bool
	// updates holds the nodes whose output has retractions (deletes, updates).
	updates map[int]bool
	// shared holds the tables the query scans more than once, by scanKey
	// (shared.go).
	shared map[string]*sharedScan
	// late holds the nodes that send late rows to the late-rows table.
	late []int
}

type input struct {
	node int
	part exec.Partition
}

func in(node int, kind exec.PartitionKind, keys ...int) input {
	return input{node: node, part: exec.Partition{Kind: kind, Keys: keys}}
}

func (b *builder) par(node int) int { return b.g.Nodes[node].Parallelism }

// add appends a node fed by the given inputs (input i of the node is ins[i]).
func (b *builder) add(op exec.OperatorSpec, par, maxPar int, ins ...input) int {
	kind := SourceNode
	switch len(ins) {
	case 1:
		kind = OneInputNode
	case 2:
		kind = TwoInputNode
	}
	n := &StreamNode{ID: len(b.g.Nodes), Op: op, Parallelism: par, MaxParallelism: maxPar, Kind: kind}
	b.g.Nodes = append(b.g.Nodes, n)
	for i, x := range ins {
		b.g.Edges = append(b.g.Edges, &StreamEdge{From: x.node, To: n.ID, Input: i, Partition: x.part})
	}
	return n.ID
}

// scan builds the source of a table; filter, if set, is the condition of the
// Filter right above it, passed to a stored table's source as a hint
// (exec.ConnectorSpec.Filter) over the table's own positions.
func (b *builder) scan(p *sql.Scan, filter *expr.Expr) (int, error) {
	if p.Table.IsView() || p.Table.IsSystem() {
		return b.view(p)
	}
	if node, ok := b.sharedScanNode(p); ok {
		return node, nil
	}
	key := p.Table.KeyColumns()
	// A stored table's scan reads rows unique by its key, not a changelog
	// of them: no upsert, and its filter reaches the source (a key lookup).
	if len(key) > 0 && !p.Table.IsStored() && b.opts.Changelog != nil && b.opts.Changelog(p.Table.Engine) {
		return b.changelog(p, key), nil
	}
	spec := exec.ConnectorSpec{Connector: p.Table.Engine, URL: p.Table.Connection,
		Schema: p.Table.Columns, Columns: p.Columns, Key: key}
	if filter != nil && p.Table.IsStored() {
		m := map[int]int{}
		for _, c := range filter.Columns(nil) {
			m[c] = c
			if p.Columns != nil {
				m[c] = p.Columns[c]
			}
		}
		spec.Filter = filter.Remap(m)
	}
	label := fmt.Sprintf("source %s [%s] %s", p.Table.Name, p.Table.Engine, names(p.Schema()))
	if b.opts.Lookup != nil {
		if l := b.opts.Lookup(spec); l != "" {
			label += " " + l
		}
	}
	wm := p.Table.Watermark
	var wmCfg operators.WatermarkConfig
	out := p.Schema()
	if wm != nil {
		wmCfg, spec.Columns, out = watermarkColumns(p, wm)
		if b.opts.SourceWatermarks != nil && b.opts.SourceWatermarks(p.Table.Engine) {
			spec.Watermark, wmCfg.FromSource = wmCfg.Expr, true
		}
	}
	op := exec.OperatorSpec{Kind: "source", Label: label, Config: exec.MustConfig(spec), Out: out}
	node := b.add(op, b.opts.Parallelism, 0)
	b.updates[node] = b.opts.Retracts != nil && b.opts.Retracts(p.Table.Engine)
	if wm != nil {
		label := "watermark " + wm.Column
		if wm.Delay >= 0 {
			label += " - " + (time.Duration(wm.Delay) * time.Microsecond).String()
		} else {
			label += " = " + wm.Expr.String()
		}
		if wmCfg.FromSource {
			label += " (per partition, in the source)"
		}
		node = b.pass(node, b.forward(node, "watermark", label, wmCfg, p.Schema()))
	}
	return node, nil
}

// watermarkColumns returns what the source of a table with a watermark reads
// (the scan's columns, then any others the watermark's expression reads) and
// emits, and the watermark operator that follows it: the expression over
// those columns, keeping the scan's.
func watermarkColumns(p *sql.Scan, wm *sql.Watermark) (operators.WatermarkConfig, []int, types.Schema) {
	cols := p.Columns
	if cols == nil {
		cols = make([]int, len(p.Table.Columns))
		for i := range cols {
			cols[i] = i
		}
	}
	keep := len(cols)
	cols = slices.Clone(cols)
	m := map[int]int{}
	for _, c := range wm.Expr.Columns(nil) {
		if _, ok := m[c]; ok {
			continue
		}
		at := slices.Index(cols, c)
		if at < 0 {
			at = len(cols)
			cols = append(cols, c)
		}
		m[c] = at
	}
	out := make(types.Schema, len(cols))
	for i, c := range cols {
		out[i] = p.Table.Columns[c]
	}
	return operators.WatermarkConfig{Expr: wm.Expr.Remap(m), Keep: keep}, cols, out
}

// forward adds a one-input operator running beside its input.
func (b *builder) forward(from int, kind, label string, cfg any, out types.Schema) int {
	op := exec.OperatorSpec{Kind: kind, Label: label, Config: exec.MustConfig(cfg), Out: out}
	return b.add(op, b.par(from), 0, in(from, exec.Forward))
}

func (b *builder) build(p sql.Plan) (int, error) {
	if node, ok, err := b.streamTopNNode(p); ok {
		return node, err
	}
	switch p := p.(type) {
	case *sql.Scan:
		return b.scan(p, nil)

	case *sql.Values:
		rows := make([][]types.Value, len(p.Rows))
		for i, r := range p.Rows {
			rows[i] = make([]types.Value, len(r))
			for j, e := range r {
				v, err := expr.EvalConst(e)
				if err != nil {
					return 0, err
				}
				rows[i][j] = v
			}
		}
		op := exec.OperatorSpec{Kind: "values", Label: fmt.Sprintf("values %d row(s)", len(rows)),
			Config: exec.MustConfig(operators.ValuesConfig{Rows: rows}), Out: p.Out}
		return b.add(op, 1, 1), nil

	case *sql.Filter:
		cond := p.Cond
		if u, ok := p.Input.(*sql.Unnest); ok && u.Func != "generate_series" {
			// Length conditions on the pieces move into the split
			// (unnest_filter.go).
			minBytes, minChars, rest := unnestLengthBounds(cond, u.Col)
			from, err := b.unnest(u, minBytes, minChars)
			if err != nil || rest == nil {
				return from, err
			}
			return b.pass(from, b.forward(from, "filter", "filter "+rest.String(), operators.FilterConfig{Cond: rest}, p.Schema())), nil
		}
		return b.filter(p, nil, p.Schema())

	case *sql.Project:
		if j, ok := p.Input.(*sql.Join); ok {
			return b.projectJoin(p, j)
		}
		exprs := p.Exprs
		var from int
		var err error
		if f, keep, ok := b.filterKeeps(p); ok {
			// The filter emits only the columns the projection reads.
			m := map[int]int{}
			out := make(types.Schema, len(keep))
			for i, c := range keep {
				m[c], out[i] = i, f.Schema()[c]
			}
			exprs = make([]*expr.Expr, len(p.Exprs))
			identity := len(keep) == len(p.Exprs)
			for i, e := range p.Exprs {
				exprs[i] = e.Remap(m)
				identity = identity && e.Kind == expr.KindColumn && e.Col == keep[i]
			}
			if identity {
				return b.filter(f, keep, p.Out)
			}
			from, err = b.filter(f, keep, out)
		} else {
			from, err = b.projectInput(p)
		}
		if err != nil {
			return 0, err
		}
		node := b.pass(from, b.forward(from, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, p.Out))
		if slices.ContainsFunc(p.Exprs, (*expr.Expr).Volatile) {
			// A column of PROCTIME(): its watermark is the wall clock's time.
			wm := operators.WatermarkConfig{Proctime: true, Keep: len(p.Out)}
			node = b.pass(node, b.forward(node, "watermark", "watermark proctime (the wall clock)", wm, p.Out))
		}
		return node, nil

	case *sql.Unnest:
		return b.unnest(p, 0, 0)

	case *sql.Aggregate:
		return b.aggregate(p)

	case *sql.Join:
		return b.join(p)

	case *sql.Window:
		from, err := b.build(p.Input)
		if err != nil {
			return 0, err
		}
		cfg, fns := windowConfig(p)
		op := exec.OperatorSpec{Kind: "window", Label: "window " + strings.Join(fns, ", "), Config: exec.MustConfig(cfg), Out: p.Out}
		if len(p.Partition) == 0 {
			return b.add(op, 1, 1, in(from, gatherOrForward(b.par(from)))), nil
		}
		// Each partition whole in one instance.
		return b.add(op, b.opts.Parallelism, 0, in(from, exec.Hash, p.Partition...)), nil

	case *sql.MaxOneRow:
		from, err := b.build(p.Input)
		if err != nil {
			return 0, err
		}
		op := exec.OperatorSpec{Kind: "max_one_row", Label: "max_one_row", Config: exec.MustConfig(struct{}{}), Out: p.Schema()}
		return b.pass(from, b.add(op, 1, 1, in(from, gatherOrForward(b.par(from))))), nil

	case *sql.Union:
		left, err := b.build(p.Left)
		if err != nil {
			return 0, err
		}
		right, err := b.build(p.Right)
		if err != nil {
			return 0, err
		}
		op := exec.OperatorSpec{Kind: "union", Label: "union all " + names(p.Out), Config: exec.MustConfig(struct{}{}), Out: p.Out}
		node := b.add(op, b.opts.Parallelism, 0, in(left, exec.Rebalance), in(right, exec.Rebalance))
		b.updates[node] = b.updates[left] || b.updates[right]
		return node, nil

	case *sql.Sort, *sql.Limit:
		if b.streaming {
			return 0, errSortOverStream()
		}
	}
	switch p := p.(type) {
	case *sql.Sort:
		return b.sort(p, 0, -1)

	case *sql.Limit:
		if s, ok := p.Input.(*sql.Sort); ok {
			return b.sort(s, p.Offset, p.Count)
		}
		from, err := b.build(p.Input)
		if err != nil {
			return 0, err
		}
		out := p.Schema()
		label := fmt.Sprintf("limit %d offset %d", p.Count, p.Offset)
		if b.par(from) > 1 {
			local := operators.LimitConfig{Offset: 0, Count: p.Count}
			if p.Count >= 0 {
				local.Count = p.Offset + p.Count
			}
			from = b.forward(from, "limit", fmt.Sprintf("limit %d (local)", local.Count), local, out)
		}
		op := exec.OperatorSpec{Kind: "limit", Label: label,
			Config: exec.MustConfig(operators.LimitConfig{Offset: p.Offset, Count: p.Count}), Out: out}
		return b.add(op, 1, 1, in(from, gatherOrForward(b.par(from)))), nil
	}
	return 0, fmt.Errorf("%w: plan node %T", sql.ErrUnsupported, p)
}

// gatherOrForward is the edge into a single-instance operator.
func gatherOrForward(fromPar int) exec.PartitionKind {
	if fromPar == 1 {
		return exec.Forward
	}
	return exec.Rebalance
}

func (b *builder) sort(p *sql.Sort, offset, limit int64) (int, error) {
	from, err := b.build(p.Input)
	if err != nil {
		return 0, err
	}
	keys := make([]operators.SortKeySpec, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = operators.SortKeySpec{Col: k.Col, Desc: k.Desc, NullsFirst: k.NullsFirst}
	}
	out := p.Schema()
	label := "sort " + sortKeys(p)
	if limit >= 0 {
		label += fmt.Sprintf(" limit %d offset %d", limit, offset)
		if b.par(from) > 1 {
			local := operators.SortConfig{Keys: keys, Offset: 0, Limit: offset + limit, MemoryLimit: b.opts.WorkMem}
			from = b.forward(from, "sort", fmt.Sprintf("sort %s limit %d (local top-n)", sortKeys(p), offset+limit), local, out)
		}
	} else if offset > 0 {
		label += fmt.Sprintf(" offset %d", offset)
	}
	op := exec.OperatorSpec{Kind: "sort", Label: label,
		Config: exec.MustConfig(operators.SortConfig{Keys: keys, Offset: offset, Limit: limit, MemoryLimit: b.opts.WorkMem}), Out: out}
	return b.add(op, 1, 1, in(from, gatherOrForward(b.par(from)))), nil
}

// changelog reads a keyed table whose connector holds upserts and deletes by
// its key (an upsert Kafka topic): the source reads every column, an upsert
// operator, hash-partitioned by the key, keeps each key's current row and
// emits the changelog (retractions included), and a projection keeps the
// columns the query reads.
func (b *builder) changelog(p *sql.Scan, key []int) int {
	t := p.Table
	spec := exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns, Key: key}
	label := fmt.Sprintf("source %s [%s] %s", t.Name, t.Engine, names(t.Columns))
	src := b.add(exec.OperatorSpec{Kind: "source", Label: label, Config: exec.MustConfig(spec), Out: t.Columns}, b.opts.Parallelism, 0)
	var keyNames []string
	for _, k := range key {
		keyNames = append(keyNames, t.Columns[k].Name)
	}
	op := exec.OperatorSpec{Kind: "upsert", Label: "upsert by " + strings.Join(keyNames, ", "),
		Config: exec.MustConfig(operators.UpsertConfig{Key: key}), Out: t.Columns}
	node := b.add(op, b.opts.Parallelism, 0, in(src, exec.Hash, key...))
	b.updates[node] = true
	if p.Columns == nil || slices.Equal(p.Columns, identity(len(t.Columns))) {
		return node
	}
	exprs := make([]*expr.Expr, len(p.Columns))
	for i, c := range p.Columns {
		exprs[i] = expr.Column(c, t.Columns[c].Type, t.Columns[c].Name)
	}
	return b.pass(node, b.forward(node, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, p.Schema()))
}

// identity is 0..n-1.
func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pass records that node, a row-at-a-time operator fed by from, retracts what
// from retracts; it returns node.
func (b *builder) pass(from, node int) int {
	b.updates[node] = b.updates[from]
	return node
}

// view reads a materialised view's rows, or a system table's, as they are
// now.
func (b *builder) view(p *sql.Scan) (int, error) {
	what := "view"
	if p.Table.IsSystem() {
		what = "system table"
	}
	if b.opts.Snapshot == nil {
		return 0, fmt.Errorf("%w: %ss cannot be read here", sql.ErrUnsupported, what)
	}
	data, err := b.opts.Snapshot(p.Table.Name)
	if err != nil {
		return 0, err
	}
	label := fmt.Sprintf("snapshot of %s %s %s", what, p.Table.Name, names(p.Schema()))
	op := exec.OperatorSpec{Kind: "snapshot", Label: label,
		Config: exec.MustConfig(operators.SnapshotConfig{Columns: p.Columns}), Data: data, Out: p.Schema()}
	return b.add(op, 1, 1), nil
}

func (b *builder) aggregate(p *sql.Aggregate) (int, error) {
	from, err := b.build(p.Input)
	if err != nil {
		return 0, err
	}
	if start, end, ok := sessionKeys(p); ok {
		return b.sessionAggregate(p, from, start, end)
	}
	if end := windowEndKey(p); end >= 0 && !b.updates[from] {
		return b.windowAggregate(p, from, end)
	}
	node, err := b.aggregateFrom(p, from)
	if err == nil && b.streaming {
		b.updates[node] = true
	}
	return node, err
}

func (b *builder) aggregateFrom(p *sql.Aggregate, from int) (int, error) {
	inSchema := p.Input.Schema()
	aggs := make([]operators.AggSpec, len(p.Aggs))
	distinct := false
	for i, a := range p.Aggs {
		aggs[i] = operators.AggSpec{Func: a.Func, Arg: a.Arg, Distinct: a.Distinct, Type: a.Type, Sep: a.Sep,
			Retract: b.streaming && b.updates[from] && (a.Func == "min" || a.Func == "max")}
		for _, k := range a.Order {
			aggs[i].Order = append(aggs[i].Order, operators.SortKeySpec{Col: k.Col, Desc: k.Desc, NullsFirst: k.NullsFirst})
		}
		// DISTINCT aggregates and string_agg keep their groups' values: they run
		// in one phase, after the rows are partitioned by group.
		distinct = distinct || a.Distinct || a.Func == "string_agg"
	}
	emit := operators.AggEmitFinal
	if b.streaming {
		emit = operators.AggEmitUpdates
		for _, a := range p.Aggs {
			if b.updates[from] && a.Func == "string_agg" {
				return 0, sql.Errorf(sql.ErrUnsupported, 0, "%s over rows that are updated or deleted (an aggregation over an aggregation of a stream) is not supported", strings.ToUpper(a.Func))
			}
		}
	}
	label := func(phase operators.AggPhase, group []int, sch types.Schema) string {
		l := fmt.Sprintf("hash_agg %s group=%s aggs=%s", phase, colNames(sch, group), aggList(p.Aggs, inSchema))
		if b.streaming {
			l += " emit=updates"
			if b.opts.StateBackend != "" && len(group) > 0 && phase != operators.AggPartial {
				l += " state_backend=" + b.opts.StateBackend
			}
		}
		return l
	}
	spec := func(phase operators.AggPhase, group []int, out, sch types.Schema) exec.OperatorSpec {
		return exec.OperatorSpec{Kind: "hash_agg", Label: label(phase, group, sch),
			Config: exec.MustConfig(operators.HashAggConfig{GroupBy: group, Aggs: aggs, Phase: phase, Emit: emit,
				MemoryLimit: b.opts.WorkMem, StateBackend: b.opts.StateBackend}), Out: out}
	}
	par := b.par(from)
	switch {
	case b.updates[from] && len(p.GroupBy) > 0:
		// A partial aggregation cannot pass retractions on as deltas.
		return b.add(spec(operators.AggComplete, p.GroupBy, p.Out, inSchema), b.opts.Parallelism, 0,
			in(from, exec.Hash, p.GroupBy...)), nil
	case b.updates[from]:
		return b.add(spec(operators.AggComplete, nil, p.Out, inSchema), 1, 1, in(from, gatherOrForward(par))), nil
	case par == 1:
		return b.add(spec(operators.AggComplete, p.GroupBy, p.Out, inSchema), 1, 0, in(from, exec.Forward)), nil
	case distinct && len(p.GroupBy) > 0:
		return b.add(spec(operators.AggComplete, p.GroupBy, p.Out, inSchema), b.opts.Parallelism, 0,
			in(from, exec.Hash, p.GroupBy...)), nil
	case distinct:
		return b.add(spec(operators.AggComplete, nil, p.Out, inSchema), 1, 1, in(from, exec.Rebalance)), nil
	}
	groupCols := make(types.Schema, len(p.GroupBy))
	finalGroup := make([]int, len(p.GroupBy))
	for i, c := range p.GroupBy {
		groupCols[i] = inSchema[c]
		finalGroup[i] = i
	}
	partialOut := operators.PartialSchema(groupCols, aggs, inSchema)
	if b.streaming {
		partialOut = operators.PartialUpdatesSchema(groupCols, aggs, inSchema)
	}
	partial := b.add(spec(operators.AggPartial, p.GroupBy, partialOut, inSchema), par, 0, in(from, exec.Forward))
	if len(p.GroupBy) == 0 {
		return b.add(spec(operators.AggFinal, nil, p.Out, partialOut), 1, 1, in(partial, exec.Rebalance)), nil
	}
	return b.add(spec(operators.AggFinal, finalGroup, p.Out, partialOut), b.opts.Parallelism, 0,
		in(partial, exec.Hash, finalGroup...)), nil
}

func names(s types.Schema) string {
	n := make([]string, len(s))
	for i, f := range s {
		n[i] = f.Name
	}
	return "(" + strings.Join(n, ", ") + ")"
}

func colNames(s types.Schema, cols []int) string {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = s[c].Name
	}
	return "[" + strings.Join(n, ", ") + "]"
}

func exprList(es []*expr.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

func aggList(aggs []sql.AggCall, in types.Schema) string {
	s := make([]string, len(aggs))
	for i, a := range aggs {
		arg := "*"
		if a.Arg >= 0 {
			arg = in[a.Arg].Name
		}
		if a.Distinct {
			arg = "distinct " + arg
		}
		s[i] = a.Func + "(" + arg + ")"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func sortKeys(p *sql.Sort) string {
	sch := p.Schema()
	s := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		s[i] = sch[k.Col].Name
		if k.Desc {
			s[i] += " desc"
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// unnest builds an unnest that drops the pieces shorter than minBytes bytes or
// minChars characters (0: none).
func (b *builder) unnest(p *sql.Unnest, minBytes, minChars int) (int, error) {
	from, err := b.build(p.Input)
	if err != nil {
		return 0, err
	}
	if p.Func == "generate_series" {
		in := p.Input.Schema()
		label := fmt.Sprintf("generate_series(%s, %s, %s)", in[p.Col].Name, in[p.Hi].Name, in[p.Step].Name)
		cfg := operators.SeriesConfig{Col: p.Col, Hi: p.Hi, Step: p.Step, Outer: p.Outer}
		return b.pass(from, b.forward(from, "series", label, cfg, p.Out)), nil
	}
	label := fmt.Sprintf("unnest %s(%s, %s)", p.Func, p.Input.Schema()[p.Col].Name, expr.FormatValue(types.StringValue(p.Sep)))
	if minBytes > 0 {
		label += fmt.Sprintf(" pieces of %d+ bytes", minBytes)
	}
	if minChars > 0 {
		label += fmt.Sprintf(" pieces of %d+ characters", minChars)
	}
	cfg := operators.UnnestConfig{Col: p.Col, Func: p.Func, Sep: p.Sep, MinBytes: minBytes, MinChars: minChars}
	return b.pass(from, b.forward(from, "unnest", label, cfg, p.Out)), nil
}

// projectJoin plans projection p of join j, the join gathering only the
// columns p reads: those p passes on as they are, in p's order (then no
// projection follows), or else those its expressions read.
func (b *builder) projectJoin(p *sql.Project, j *sql.Join) (int, error) {
	refs, passOn := columnRefs(p.Exprs)
	keep, out, exprs := refs, p.Out, p.Exprs
	if !passOn {
		keep = readColumns(p.Exprs)
		m := make(map[int]int, len(keep))
		out = make(types.Schema, len(keep))
		for i, c := range keep {
			m[c], out[i] = i, j.Out[c]
		}
		exprs = make([]*expr.Expr, len(p.Exprs))
		for i, e := range p.Exprs {
			exprs[i] = e.Remap(m)
		}
	}
	node, kept, err := b.joinKeeping(j, keep, out)
	switch {
	case err != nil:
		return 0, err
	case kept && passOn:
		return node, nil // the join's columns are p's
	case !kept:
		exprs = p.Exprs // over the join's whole pairs
	}
	return b.pass(node, b.forward(node, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, p.Out)), nil
}

// readColumns returns the input columns exprs read, in order.
func readColumns(exprs []*expr.Expr) []int {
	var cols []int
	for _, e := range exprs {
		cols = e.Columns(cols)
	}
	return slices.Compact(slices.Sorted(slices.Values(cols)))
}

// columnRefs returns the input columns of projection exprs when each is a
// plain column reference.
func columnRefs(exprs []*expr.Expr) ([]int, bool) {
	cols := make([]int, len(exprs))
	for i, e := range exprs {
		if e.Kind != expr.KindColumn {
			return nil, false
		}
		cols[i] = e.Col
	}
	return cols, true
}
