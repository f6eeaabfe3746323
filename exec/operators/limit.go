package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hummer-db/hummer/exec"
)

// limitOp is kind "limit" (see LimitConfig): it passes rows Offset.. up to Count
// of them and drops the rest. Passed batches are zero-copy slices of the input.
// Signals keep flowing after the limit is reached.
type limitOp struct {
	offset int64 // rows still to skip
	left   int64 // rows still to pass; < 0 for no limit
}

var _ exec.Operator = (*limitOp)(nil)

func newLimitOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg LimitConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("limit: bad config: %w", err)
	}
	if cfg.Offset < 0 {
		return nil, fmt.Errorf("limit: negative offset %d", cfg.Offset)
	}
	return &limitOp{offset: cfg.Offset, left: cfg.Count}, nil
}

func (o *limitOp) Open(ctx context.Context, tc *exec.TaskContext) error { return nil }

func (o *limitOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := int64(b.NumRows())
	if n == 0 || o.left == 0 {
		return nil
	}
	lo := min(o.offset, n)
	o.offset -= lo
	hi := n
	if o.left >= 0 {
		hi = min(n, lo+o.left)
		o.left -= hi - lo
	}
	if lo == hi {
		return nil
	}
	if lo == 0 && hi == n {
		return out.Collect(ctx, b)
	}
	s := exec.Batch{Rec: b.Rec.NewSlice(lo, hi)}
	defer s.Rec.Release()
	if b.Ops != nil {
		s.Ops = b.Ops[lo:hi]
	}
	return out.Collect(ctx, s)
}

func (o *limitOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *limitOp) Close(ctx context.Context) error { return nil }
