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
// hi, step) over bigints: input columns Col, Hi and Step hold them. Each
// input row becomes one row per value lo, lo+step, ... up to hi (down to it
// for a negative step), in Col, the other columns repeated. A NULL bound or
// step gives no rows; a zero step is an error.
//
// With Outer, an input row whose series is empty (or NULL) gives one row
// with NULL in Col instead of none: a lateral series the rows of a
// correlated subquery's domain are expanded by (sql/bind_lateral.go).
type SeriesConfig struct {
	Col   int  `json:"col"`
	Hi    int  `json:"hi"`
	Step  int  `json:"step"`
	Outer bool `json:"outer,omitempty"`
}

// seriesRowsMax bounds the rows one input row may expand to in one batch's
// output; a longer series is emitted over several batches.
const seriesRowsMax = vector.OutBatchRows

type seriesOp struct {
	col, hi, step int
	outer         bool
	out           *arrow.Schema
	mem           memory.Allocator
}

var _ exec.Operator = (*seriesOp)(nil)

func newSeriesOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg SeriesConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("series: bad config: %w", err)
	}
	for _, c := range []int{cfg.Col, cfg.Hi, cfg.Step} {
		if c < 0 || c >= len(spec.Out) {
			return nil, fmt.Errorf("series: column %d out of range of %d columns", c, len(spec.Out))
		}
	}
	return &seriesOp{col: cfg.Col, hi: cfg.Hi, step: cfg.Step, outer: cfg.Outer, out: spec.Out.Arrow()}, nil
}

func (o *seriesOp) Open(_ context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *seriesOp) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	rec := b.Rec
	nc := int(rec.NumCols())
	if nc != o.out.NumFields() {
		return fmt.Errorf("series: input has %d columns, want %d", nc, o.out.NumFields())
	}
	lo, ok1 := int64s(rec.Column(o.col))
	hi, ok2 := int64s(rec.Column(o.hi))
	step, ok3 := rec.Column(o.step).(*array.Int64)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("series: bounds must be bigints or timestamps, and the step a bigint")
	}
	var (
		rep   []int32
		vals  []int64
		nulls []bool // with outer: the rows of empty series
	)
	flush := func() error {
		if len(rep) == 0 {
			return nil
		}
		defer func() { rep, vals, nulls = rep[:0], vals[:0], nulls[:0] }()
		cols := make([]arrow.Array, 0, nc)
		for j := 0; j < nc; j++ {
			if j == o.col {
				valid := make([]bool, len(vals))
				for k := range valid {
					valid[k] = k >= len(nulls) || !nulls[k]
				}
				cols = append(cols, o.seriesArray(vals, valid))
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
			if o.outer {
				rep, vals, nulls = append(rep, int32(i)), append(vals, 0), o.markNull(nulls, len(rep))
			}
			continue
		}
		from, to, by := lo.Value(i), hi.Value(i), step.Value(i)
		if by == 0 {
			return expr.Errorf(expr.ErrInvalidArgument, "step size cannot equal zero")
		}
		if o.outer && (by > 0 && from > to || by < 0 && from < to) {
			rep, vals, nulls = append(rep, int32(i)), append(vals, 0), o.markNull(nulls, len(rep))
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

// seriesArray makes the series column, of the output's type (bigint or
// timestamp).
func (o *seriesOp) seriesArray(vals []int64, valid []bool) arrow.Array {
	if dt, ok := o.out.Field(o.col).Type.(*arrow.TimestampType); ok {
		bld := array.NewTimestampBuilder(o.mem, dt)
		defer bld.Release()
		bld.Reserve(len(vals))
		for k, v := range vals {
			if valid[k] {
				bld.UnsafeAppend(arrow.Timestamp(v))
			} else {
				bld.UnsafeAppendBoolToBitmap(false)
			}
		}
		return bld.NewArray()
	}
	bld := array.NewInt64Builder(o.mem)
	defer bld.Release()
	bld.AppendValues(vals, valid)
	return bld.NewArray()
}

// int64s reads a bigint or timestamp array as its int64 values.
func int64s(a arrow.Array) (interface {
	IsNull(int) bool
	Value(int) int64
}, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return a, true
	case *array.Timestamp:
		return timestamps{a}, true
	}
	return nil, false
}

type timestamps struct{ *array.Timestamp }

func (t timestamps) Value(i int) int64 { return int64(t.Timestamp.Value(i)) }

// markNull records that output row k (of the batch being built) is NULL.
func (o *seriesOp) markNull(nulls []bool, k int) []bool {
	for len(nulls) < k {
		nulls = append(nulls, false)
	}
	return append(nulls, true)
}

func (o *seriesOp) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *seriesOp) Close(context.Context) error { return nil }
