package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// projectOp is kind "project" (see ProjectConfig): one output column per
// expression, evaluated over the whole batch. A bare column reference shares
// the input's array (Retain) instead of copying it. Change kinds pass through.
type projectOp struct {
	exprs []*expr.Expr
	out   *arrow.Schema
	mem   memory.Allocator
}

var _ exec.Operator = (*projectOp)(nil)

func newProjectOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg ProjectConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("project: bad config: %w", err)
	}
	if len(spec.Out) != len(cfg.Exprs) {
		return nil, fmt.Errorf("project: %d expressions for %d output columns", len(cfg.Exprs), len(spec.Out))
	}
	for i, e := range cfg.Exprs {
		if e == nil {
			return nil, fmt.Errorf("project: expression %d missing", i)
		}
	}
	return &projectOp{exprs: cfg.Exprs, out: spec.Out.Arrow()}, nil
}

func (o *projectOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *projectOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, len(o.exprs))
	for _, e := range o.exprs {
		if e.Kind == expr.KindColumn {
			if e.Col < 0 || e.Col >= int(b.Rec.NumCols()) {
				vector.ReleaseArrays(cols)
				return fmt.Errorf("project: column %d out of range (%d columns)", e.Col, b.Rec.NumCols())
			}
			c := b.Rec.Column(e.Col)
			c.Retain()
			cols = append(cols, c)
			continue
		}
		c, err := expr.Eval(e, b.Rec, o.mem)
		if err != nil {
			vector.ReleaseArrays(cols)
			return fmt.Errorf("project: %s: %w", e, err)
		}
		cols = append(cols, c)
	}
	rec, err := vector.MakeRecord(o.out, cols, n)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: b.Ops})
}

func (o *projectOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *projectOp) Close(ctx context.Context) error { return nil }
