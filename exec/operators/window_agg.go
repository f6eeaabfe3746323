package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// WindowAggConfig configures kind "window_agg": the aggregation Agg (a
// GROUP BY whose keys include a window's end) over an input with a
// watermark, run per window of event time. End is the position, among
// Agg.GroupBy's keys, of the window's end (a timestamp, exclusive).
type WindowAggConfig struct {
	Agg HashAggConfig `json:"agg"`
	End int           `json:"end"`
}

// windowAggOp is kind "window_agg" (see WindowAggConfig). It keeps one
// bounded aggregation (a hash_agg emitting once, at its end) per window that
// is open, and when the watermark passes a window's last instant (its end
// less a microsecond: Flink's maxTimestamp) it ends that window's
// aggregation, whose rows go out (inserts, once: the output is append-only),
// and frees it; then it forwards the watermark. A row of a window already
// closed is late: it is dropped and counted (TaskMetrics.LateRows), as is a
// row without a window (a NULL time). At end of stream every window still
// open closes, in order of their ends.
//
// In a two-phase plan the partial phase closes its windows at the watermark
// too, so its rows for a window reach the final phase before the watermark
// that closes it there. It is Checkpointed: the state is every open window's
// aggregation's, and the watermark.
type windowAggOp struct {
	cfg     WindowAggConfig
	spec    exec.OperatorSpec
	endCol  int // the input column of the window's end
	tc      *exec.TaskContext
	mem     memory.Allocator
	late    func(n int64)
	windows map[int64]*hashAggOp
	mark    int64 // the watermark; math.MinInt64 before the first
	byEnd   map[int64][]int32
}

var (
	_ exec.Operator     = (*windowAggOp)(nil)
	_ exec.Checkpointed = (*windowAggOp)(nil)
)

func newWindowAggOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg WindowAggConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("window_agg: bad config: %w", err)
	}
	if cfg.End < 0 || cfg.End >= len(cfg.Agg.GroupBy) {
		return nil, fmt.Errorf("window_agg: window end key %d of %d keys", cfg.End, len(cfg.Agg.GroupBy))
	}
	cfg.Agg.Emit = AggEmitFinal
	if _, err := newHashAgg(cfg.Agg, spec); err != nil { // check the config once
		return nil, err
	}
	o := &windowAggOp{cfg: cfg, spec: spec, endCol: cfg.Agg.GroupBy[cfg.End], windows: map[int64]*hashAggOp{}, mark: math.MinInt64}
	if cfg.Agg.Phase == AggFinal {
		o.endCol = cfg.End // a final aggregate's input has the keys first
	}
	return o, nil
}

func (o *windowAggOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.tc = tc
	o.mem = vector.TaskAlloc(tc)
	o.late = func(int64) {}
	if tc.Metrics != nil {
		o.late = func(n int64) { tc.Metrics.LateRows.Add(n) }
	}
	return nil
}

// window returns the aggregation of the window ending at end, opening it.
func (o *windowAggOp) window(ctx context.Context, end int64) (*hashAggOp, error) {
	if w := o.windows[end]; w != nil {
		return w, nil
	}
	w, err := newHashAgg(o.cfg.Agg, o.spec)
	if err != nil {
		return nil, err
	}
	if err := w.Open(ctx, o.tc); err != nil {
		return nil, err
	}
	o.windows[end] = w
	return w, nil
}

// closed reports whether the window ending at end has closed: the watermark
// has reached its last instant.
func (o *windowAggOp) closed(end int64) bool { return end-1 <= o.mark }

func (o *windowAggOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	ends, ok := b.Rec.Column(o.endCol).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("window_agg: the window's end is %s, not a timestamp", b.Rec.Column(o.endCol).DataType())
	}
	vals := ends.TimestampValues()
	// The usual batch: every row in one open window.
	first := int64(vals[0])
	same := ends.NullN() == 0 && !o.closed(first)
	for i := 1; same && i < n; i++ {
		same = int64(vals[i]) == first
	}
	if same {
		w, err := o.window(ctx, first)
		if err != nil {
			return err
		}
		return w.ProcessBatch(ctx, 0, b, out)
	}
	clear(o.byEnd)
	if o.byEnd == nil {
		o.byEnd = map[int64][]int32{}
	}
	var late int64
	for i := range n {
		e := int64(vals[i])
		if ends.IsNull(i) || o.closed(e) {
			late++
			continue
		}
		o.byEnd[e] = append(o.byEnd[e], int32(i))
	}
	if late > 0 {
		o.late(late)
	}
	for _, e := range slices.Sorted(maps.Keys(o.byEnd)) {
		idx := o.byEnd[e]
		rec, err := vector.GatherRecord(o.mem, b.Rec, idx)
		if err != nil {
			return err
		}
		w, err := o.window(ctx, e)
		if err == nil {
			err = w.ProcessBatch(ctx, 0, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, idx)}, out)
		}
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// closeUpTo ends the aggregations of the windows that have closed, in order
// of their ends, emitting their rows.
func (o *windowAggOp) closeUpTo(ctx context.Context, out exec.Collector) error {
	var ends []int64
	for e := range o.windows {
		if o.closed(e) {
			ends = append(ends, e)
		}
	}
	slices.Sort(ends)
	rows := rowsOnly{out}
	for _, e := range ends {
		w := o.windows[e]
		delete(o.windows, e)
		err := w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rows)
		w.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

// rowsOnly passes batches on and drops signals: a window's aggregation ends
// with an end of stream that is not the operator's.
type rowsOnly struct{ exec.Collector }

func (rowsOnly) CollectSignal(context.Context, exec.Signal) error { return nil }

func (o *windowAggOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		if s.Watermark <= o.mark {
			return nil
		}
		o.mark = s.Watermark
		if err := o.closeUpTo(ctx, out); err != nil {
			return err
		}
	case exec.EndOfStream:
		o.mark = math.MaxInt64
		if err := o.closeUpTo(ctx, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

func (o *windowAggOp) Close(ctx context.Context) error {
	for e, w := range o.windows {
		w.Close(ctx)
		delete(o.windows, e)
	}
	return nil
}

// windowAggState is what SnapshotState returns, as JSON.
type windowAggState struct {
	Mark    int64         `json:"mark"`
	Windows []windowState `json:"windows"`
}

type windowState struct {
	End   int64  `json:"end"`
	State []byte `json:"state"`
}

func (o *windowAggOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	st := windowAggState{Mark: o.mark}
	for _, e := range slices.Sorted(maps.Keys(o.windows)) {
		b, err := o.windows[e].SnapshotState(ctx, checkpoint)
		if err != nil {
			return nil, err
		}
		st.Windows = append(st.Windows, windowState{End: e, State: b})
	}
	return json.Marshal(st)
}

func (o *windowAggOp) RestoreState(ctx context.Context, data []byte) error {
	var st windowAggState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("window_agg: bad checkpoint state: %w", err)
	}
	o.mark = st.Mark
	for _, ws := range st.Windows {
		w, err := o.window(ctx, ws.End)
		if err != nil {
			return err
		}
		if err := w.RestoreState(ctx, ws.State); err != nil {
			return err
		}
	}
	return nil
}
