package operators

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
)

// unionOp is kind "union": UNION ALL of its two inputs, whose columns have
// the types of its output (the planner casts them). Batches pass through, with
// their change kinds, relabelled with the output's names; a watermark goes on
// as the minimum over the running inputs, EndOfStream once both inputs ended.
// UNION, INTERSECT and EXCEPT are built from it and an aggregation.
type unionOp struct {
	out *arrow.Schema
	in  twoInputs
}

var _ exec.Operator = (*unionOp)(nil)

func newUnionOp(spec exec.OperatorSpec) (exec.Operator, error) {
	return &unionOp{out: spec.Out.Arrow()}, nil
}

func (o *unionOp) Open(ctx context.Context, tc *exec.TaskContext) error { return nil }

func (o *unionOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if b.NumRows() == 0 {
		return nil
	}
	if int(b.Rec.NumCols()) != o.out.NumFields() {
		return fmt.Errorf("union: input %d has %d columns, the output %d", input, b.Rec.NumCols(), o.out.NumFields())
	}
	for i, c := range b.Rec.Columns() {
		if !arrow.TypeEqual(c.DataType(), o.out.Field(i).Type) {
			return fmt.Errorf("union: column %d of input %d is %s, the output's %s", i, input, c.DataType(), o.out.Field(i).Type)
		}
	}
	if b.Rec.Schema().Equal(o.out) {
		return out.Collect(ctx, b)
	}
	rec := array.NewRecordBatch(o.out, b.Rec.Columns(), b.Rec.NumRows())
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: b.Ops})
}

func (o *unionOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("union: no input %d", input)
	}
	switch s.Kind {
	case exec.EndOfStream:
		first, ended := o.in.end(input)
		switch {
		case !first:
			return nil
		case ended:
			return out.CollectSignal(ctx, s)
		}
		return o.in.forward(ctx, out)
	case exec.Watermark:
		return o.in.watermark(ctx, input, s.Watermark, out)
	case exec.Idle:
		return o.in.idleInput(ctx, input, out)
	}
	return out.CollectSignal(ctx, s)
}

func (o *unionOp) Close(ctx context.Context) error { return nil }
