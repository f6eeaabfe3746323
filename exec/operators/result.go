package operators

import (
	"context"
	"fmt"

	"github.com/hummer-db/hummer/exec"
)

// resultOp is kind "result", the sink of a query answered to a client: every
// batch goes to TaskContext.Results for job JobID. It emits and forwards
// nothing; end of stream is the task's business.
type resultOp struct {
	tc *exec.TaskContext
}

var _ exec.Operator = (*resultOp)(nil)

func newResultOp(spec exec.OperatorSpec) (exec.Operator, error) { return &resultOp{}, nil }

func (o *resultOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	if tc == nil || tc.Results == nil {
		return fmt.Errorf("result: the task has no result sink")
	}
	o.tc = tc
	return nil
}

func (o *resultOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if b.NumRows() == 0 {
		return nil
	}
	return o.tc.Results.Send(ctx, o.tc.JobID, b)
}

func (o *resultOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return nil
}

func (o *resultOp) Close(ctx context.Context) error { return nil }
