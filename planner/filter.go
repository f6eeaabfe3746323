package planner

// Filters: a filter over its scan (whose range conditions the scan may take)
// and a filter that emits only the columns its consumer reads.

import (
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// filter builds filter p that emits its input's columns keep (nil: all), of
// schema out.
func (b *builder) filter(p *sql.Filter, keep []int, out types.Schema) (int, error) {
	var from int
	var err error
	if scan, ok := p.Input.(*sql.Scan); ok {
		from, err = b.scan(scan, p.Cond)
	} else {
		from, err = b.build(p.Input)
	}
	if err != nil {
		return 0, err
	}
	label := "filter " + p.Cond.String()
	if keep != nil {
		label += " keep " + names(out)
	}
	return b.pass(from, b.forward(from, "filter", label, operators.FilterConfig{Cond: p.Cond, Keep: keep}, out)), nil
}

// filterKeeps returns, for projection p over a filter, the filter and the
// filter's columns p reads, ascending, when they are fewer than its columns:
// the filter emits only those, gathering no other for the rows that pass (the
// columns its condition alone reads: TPC-H q4's l_commitdate and
// l_receiptdate, which the pruner projects away, rewrite_prune.go). A
// filter over a window (a Top-N's) or a split (unnest's length conditions)
// is left to its own planning.
func (b *builder) filterKeeps(p *sql.Project) (*sql.Filter, []int, bool) {
	f, ok := p.Input.(*sql.Filter)
	if !ok {
		return nil, nil, false
	}
	switch f.Input.(type) {
	case *sql.Window, *sql.Unnest:
		return nil, nil, false
	}
	if _, _, ok := b.projectTopN(p); ok {
		return nil, nil, false
	}
	n := len(f.Schema())
	read := make([]bool, n)
	for _, e := range p.Exprs {
		for _, c := range e.Columns(nil) {
			read[c] = true
		}
	}
	var keep []int
	for c, r := range read {
		if r {
			keep = append(keep, c)
		}
	}
	if len(keep) == 0 || len(keep) == n {
		return nil, nil, false
	}
	return f, keep, true
}
