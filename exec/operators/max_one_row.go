package operators

import (
	"context"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
)

// maxOneRowOp is kind "max_one_row": it passes its input, a scalar
// subquery's rows, and fails the query with expr.ErrSubqueryRows at a second
// row. It runs as one instance.
type maxOneRowOp struct {
	rows int
}

var _ exec.Operator = (*maxOneRowOp)(nil)

func newMaxOneRowOp(exec.OperatorSpec) (exec.Operator, error) { return &maxOneRowOp{}, nil }

func (o *maxOneRowOp) Open(context.Context, *exec.TaskContext) error { return nil }

func (o *maxOneRowOp) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.rows += n; o.rows > 1 {
		return expr.ErrSubqueryRows
	}
	return out.Collect(ctx, b)
}

func (o *maxOneRowOp) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *maxOneRowOp) Close(context.Context) error { return nil }
