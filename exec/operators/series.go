package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// SeriesConfig configures kind "series", PostgreSQL's generate_series(lo,
// hi[, step]) over bigints: input column Col holds lo, and the input's last
// two columns hi and step. Each input row becomes one row per value lo,
// lo+step, ... up to hi (down to it for a negative step), in Col, the other
// columns repeated; hi and step are not output. A NULL bound or step gives
// no rows; a zero step is an error.
type SeriesConfig struct {
	Col int `json:"col"`
}

// seriesRowsMax bounds the rows one input row may expand to in one batch's
// output; a longer series is emitted over several batches.
const seriesRowsMax = vector.OutBatchRows

type seriesOp struct {
	col int
	out *arrow.Schema
	mem memory.Allocator
}

var _ exec.Operator = (*seriesOp)(nil)

func newSeriesOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg SeriesConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("series: bad config: %w", err)
	}
	if cfg.Col < 0 || cfg.Col >= len(spec.Out) {
		return nil, fmt.Errorf("series: column %d out of range of %d output columns", cfg.Col, len(spec.Out))
	}
	return &seriesOp{col: cfg.Col, out: spec.Out.Arrow()}, nil
}

func (o *seriesOp) Open(_ context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *seriesOp) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	rec := b.Rec
	nc := int(rec.NumCols())
	if nc != o.out.NumFields()+2 {
		return fmt.Errorf("series: input has %d columns, want %d", nc, o.out.NumFields()+2)
	}
	lo, ok1 := rec.Column(o.col).(*array.Int64)
	hi, ok2 := rec.Column(nc - 2).(*array.Int64)
	step, ok3 := rec.Column(nc - 1).(*array.Int64)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("series: bounds and step must be bigint")
	}
	var (
		rep  []int32
		vals []int64
	)
	flush := func() error {
		if len(rep) == 0 {
			return nil
		}
		defer func() { rep, vals = rep[:0], vals[:0] }()
		cols := make([]arrow.Array, 0, o.out.NumFields())
		for j := 0; j < nc-2; j++ {
			if j == o.col {
				bld := array.NewInt64Builder(o.mem)
				bld.AppendValues(vals, nil)
				cols = append(cols, bld.NewArray())
				bld.Release()
				continue
			}
			g, err := vector.GatherArray(o.mem, rec.Column(j), rep)
			if err != nil {
				vector.ReleaseArrays(cols)
				return fmt.Errorf("series: %w", err)
			}
			cols = append(cols, g)
		}
		r, err := vector.MakeRecord(o.out, cols, len(rep))
		if err != nil {
			return fmt.Errorf("series: %w", err)
		}
		defer r.Release()
		var ops []exec.ChangeKind
		if b.Ops != nil {
			ops = vector.GatherOps(b.Ops, rep)
		}
		return out.Collect(ctx, exec.Batch{Rec: r, Ops: ops})
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if lo.IsNull(i) || hi.IsNull(i) || step.IsNull(i) {
			continue
		}
		from, to, by := lo.Value(i), hi.Value(i), step.Value(i)
		if by == 0 {
			return fmt.Errorf("%w: step size cannot equal zero", expr.ErrInvalidArgument)
		}
		for v := from; by > 0 && v <= to || by < 0 && v >= to; v += by {
			rep, vals = append(rep, int32(i)), append(vals, v)
			if len(rep) == seriesRowsMax {
				if err := flush(); err != nil {
					return err
				}
			}
			if by > 0 && v > to-by || by < 0 && v < to-by { // the next would overflow or pass to
				break
			}
		}
	}
	return flush()
}

func (o *seriesOp) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *seriesOp) Close(context.Context) error { return nil }
