package planner

// Shared scans: a bounded query that reads one table more than once (TPC-H q21
// reads lineitem three times, q17, q18 and q20 twice, through subqueries) reads
// it once, and each reference takes its columns from that one source. Parsing
// a file is most of what such a query costs, and what one pass gives to
// several consumers costs nothing more.
//
// Only in a bounded query, where no operator stops taking input before its
// inputs end (a hash join holds the probe rows that come before its build
// side ends, a limit drops what is past it): the source sends each batch to
// every consumer, so a consumer that stopped reading would stall the others.
// Tables Hummer stores itself are left alone: their scans are cheap, and each
// takes the filter of its own reference as a hint (exec.ConnectorSpec.Filter).

import (
	"fmt"
	"slices"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/sql"
)

// sharedScan is one table read by several scans of a query: the columns the
// shared source reads (the union of theirs, in table order) and the source's
// node once it is built (-1 before).
type sharedScan struct {
	cols []int
	node int
}

// scanKey names a table's data: two scans with the same key read the same rows.
func scanKey(t *sql.Table) string { return t.Engine + "\x00" + t.Connection }

// shareable reports whether scans of p's table may share one source.
func (b *builder) shareable(p *sql.Scan) bool {
	t := p.Table
	if b.streaming || t.IsView() || t.IsSystem() || t.IsStored() || t.Watermark != nil {
		return false
	}
	return len(t.KeyColumns()) == 0 || b.opts.Changelog == nil || !b.opts.Changelog(t.Engine)
}

// findShared notes the tables that plan p scans more than once.
func (b *builder) findShared(p sql.Plan) {
	count := map[string]int{}
	cols := map[string][]int{}
	all := map[string]bool{} // some scan reads every column
	var walk func(p sql.Plan)
	walk = func(p sql.Plan) {
		if s, ok := p.(*sql.Scan); ok && b.shareable(s) {
			k := scanKey(s.Table)
			count[k]++
			cols[k] = append(cols[k], s.Columns...)
			all[k] = all[k] || s.Columns == nil
		}
		for _, in := range p.Inputs() {
			walk(in)
		}
	}
	walk(p)
	for k, n := range count {
		if n < 2 {
			continue
		}
		var c []int // nil: every column
		if !all[k] {
			c = slices.Compact(slices.Sorted(slices.Values(cols[k])))
		}
		if b.shared == nil {
			b.shared = map[string]*sharedScan{}
		}
		b.shared[k] = &sharedScan{cols: c, node: -1}
	}
}

// sharedScanNode returns scan p read from its table's shared source: the
// source (built by the first scan to ask), then a projection to p's columns.
// ok is false when p's table is not shared.
func (b *builder) sharedScanNode(p *sql.Scan) (node int, ok bool) {
	sh := b.shared[scanKey(p.Table)]
	if sh == nil || !b.shareable(p) {
		return 0, false
	}
	t := p.Table
	if sh.node < 0 {
		whole := &sql.Scan{Table: t, Columns: sh.cols}
		spec := exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns, Columns: sh.cols}
		label := fmt.Sprintf("source %s [%s] %s (shared)", t.Name, t.Engine, names(whole.Schema()))
		op := exec.OperatorSpec{Kind: "source", Label: label, Config: exec.MustConfig(spec), Out: whole.Schema()}
		sh.node = b.add(op, b.opts.Parallelism, 0)
		b.updates[sh.node] = b.opts.Retracts != nil && b.opts.Retracts(t.Engine)
	}
	want := p.Columns
	if want == nil {
		want = make([]int, len(t.Columns))
		for i := range want {
			want[i] = i
		}
	}
	if slices.Equal(want, sh.cols) {
		return sh.node, true // the source's own columns
	}
	out := p.Schema()
	exprs := make([]*expr.Expr, len(want))
	for i, c := range want {
		at := c // the shared source reads every column
		if sh.cols != nil {
			at = slices.Index(sh.cols, c)
		}
		exprs[i] = expr.Column(at, out[i].Type, out[i].Name)
	}
	node = b.forward(sh.node, "project", "project "+exprList(exprs), operators.ProjectConfig{Exprs: exprs}, out)
	b.updates[node] = b.updates[sh.node]
	return node, true
}
