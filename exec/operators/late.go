package operators

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// LateConfig, in the config of a windowed operator (window_agg, window_topn,
// session_agg, over_agg), sends the rows it finds late to its task's late
// edges (exec.TaskContext.Late), which lead to the job's late-rows table
// (SET late_rows_table), as rows of schema Out. Cols[i] says what column i
// of Out holds: a column of the operator's input (a position, >= 0),
// LateWatermark or LateOperator.
type LateConfig struct {
	Cols     []int        `json:"cols"`
	Out      types.Schema `json:"out"`
	Operator string       `json:"operator"`
}

// The columns of a late row that are not the input's (LateConfig.Cols).
const (
	// LateWatermark is the operator's watermark when the row came, a
	// timestamp (NULL before its first watermark).
	LateWatermark = -1
	// LateOperator is the text LateConfig.Operator: which operator of the
	// job found the row late.
	LateOperator = -2
)

// lateRows is what a windowed operator does with the rows it finds late:
// it counts them (TaskMetrics.LateRows) and, with a LateConfig and a late
// output, sends them on.
type lateRows struct {
	cfg *LateConfig
	tc  *exec.TaskContext
	mem memory.Allocator
}

func newLateRows(cfg *LateConfig, tc *exec.TaskContext) lateRows {
	l := lateRows{tc: tc}
	if tc != nil && tc.Late != nil && cfg != nil {
		l.cfg, l.mem = cfg, vector.TaskAlloc(tc)
	}
	return l
}

// count counts n late rows that are not sent anywhere.
func (l *lateRows) count(n int) {
	if n > 0 && l.tc != nil && l.tc.Metrics != nil {
		l.tc.Metrics.LateRows.Add(int64(n))
	}
}

// emit counts rows idx of b, found late at watermark mark, and sends them to
// the late output if there is one.
func (l *lateRows) emit(ctx context.Context, b exec.Batch, idx []int32, mark int64) error {
	l.count(len(idx))
	if l.cfg == nil || len(idx) == 0 {
		return nil
	}
	rows, err := vector.GatherRecord(l.mem, b.Rec, idx)
	if err != nil {
		return err
	}
	defer rows.Release()
	n := len(idx)
	cols := make([]arrow.Array, len(l.cfg.Cols))
	for i, c := range l.cfg.Cols {
		switch c {
		case LateWatermark:
			tb := array.NewTimestampBuilder(l.mem, types.TimestampType.Arrow().(*arrow.TimestampType))
			for range n {
				if mark == math.MinInt64 {
					tb.AppendNull()
				} else {
					tb.Append(arrow.Timestamp(mark))
				}
			}
			cols[i] = tb.NewArray()
			tb.Release()
		case LateOperator:
			sb := array.NewStringBuilder(l.mem)
			for range n {
				sb.Append(l.cfg.Operator)
			}
			cols[i] = sb.NewArray()
			sb.Release()
		default:
			cols[i] = rows.Column(c)
			cols[i].Retain()
		}
	}
	rec, err := vector.MakeRecord(l.cfg.Out.Arrow(), cols, n)
	if err != nil {
		return err
	}
	defer rec.Release()
	return l.tc.Late.Collect(ctx, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, idx)})
}
