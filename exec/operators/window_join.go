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

// WindowJoinConfig configures kind "window_join": the equi-join Join of two
// inputs with watermarks whose keys include both sides' window ends, at
// positions LeftEnd and RightEnd of the inputs (Flink's window join: Nexmark
// q5, q8).
type WindowJoinConfig struct {
	Join     JoinConfig `json:"join"`
	LeftEnd  int        `json:"left_end"`
	RightEnd int        `json:"right_end"`
}

// windowJoinOp is kind "window_join" (see WindowJoinConfig). It keeps one
// bounded hash join per window that is open, fed both sides' rows of the
// window; when the watermark (the least of both sides') reaches the window's
// last microsecond, both sides of that join end, its rows go out (once:
// the output is append-only) and it is freed. Rows of a window already
// closed are late: dropped and counted. End of stream closes every window.
// It is Checkpointed: each open window's join, and the watermark.
type windowJoinOp struct {
	cfg     WindowJoinConfig
	inner   exec.OperatorSpec // a window's hash_join
	tc      *exec.TaskContext
	mem     memory.Allocator
	late    func(n int64)
	windows map[int64]*hashJoinOp
	mark    int64
	ended   [2]bool
	byEnd   map[int64][]int32
}

var (
	_ exec.Operator     = (*windowJoinOp)(nil)
	_ exec.Checkpointed = (*windowJoinOp)(nil)
)

func newWindowJoinOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg WindowJoinConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("window_join: bad config: %w", err)
	}
	cfg.Join.MemoryLimit = -1 // a window's rows stay in memory until it closes
	inner := spec
	inner.Kind, inner.Config = "hash_join", exec.MustConfig(cfg.Join)
	if _, err := newHashJoinOp(inner); err != nil { // check the config once
		return nil, err
	}
	if cfg.LeftEnd < 0 || cfg.LeftEnd >= len(cfg.Join.Left) || cfg.RightEnd < 0 || cfg.RightEnd >= len(cfg.Join.Right) {
		return nil, fmt.Errorf("window_join: window end columns %d, %d out of range", cfg.LeftEnd, cfg.RightEnd)
	}
	return &windowJoinOp{cfg: cfg, inner: inner, windows: map[int64]*hashJoinOp{}, mark: math.MinInt64}, nil
}

func (o *windowJoinOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.tc = tc
	o.mem = vector.TaskAlloc(tc)
	o.late = func(int64) {}
	if tc.Metrics != nil {
		o.late = func(n int64) { tc.Metrics.LateRows.Add(n) }
	}
	return nil
}

func (o *windowJoinOp) window(ctx context.Context, end int64) (*hashJoinOp, error) {
	if w := o.windows[end]; w != nil {
		return w, nil
	}
	op, err := newHashJoinOp(o.inner)
	if err != nil {
		return nil, err
	}
	w := op.(*hashJoinOp)
	if err := w.Open(ctx, o.tc); err != nil {
		return nil, err
	}
	o.windows[end] = w
	return w, nil
}

func (o *windowJoinOp) closed(end int64) bool { return end-1 <= o.mark }

func (o *windowJoinOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	col := o.cfg.LeftEnd
	if input == 1 {
		col = o.cfg.RightEnd
	}
	ends, ok := b.Rec.Column(col).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("window_join: the window's end is %s, not a timestamp", b.Rec.Column(col).DataType())
	}
	if o.byEnd == nil {
		o.byEnd = map[int64][]int32{}
	}
	clear(o.byEnd)
	var late int64
	vals := ends.TimestampValues()
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
		w, err := o.window(ctx, e)
		if err != nil {
			return err
		}
		idx := o.byEnd[e]
		if len(idx) == n {
			err = w.ProcessBatch(ctx, input, b, out)
		} else {
			var rec = b.Rec
			if rec, err = vector.GatherRecord(o.mem, b.Rec, idx); err == nil {
				err = w.ProcessBatch(ctx, input, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, idx)}, out)
				rec.Release()
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// closeUpTo ends the joins of the windows that have closed, in order of
// their ends: the build side (1), then the probe side (0).
func (o *windowJoinOp) closeUpTo(ctx context.Context, out exec.Collector) error {
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
		err := w.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, rows)
		if err == nil {
			err = w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rows)
		}
		w.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *windowJoinOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		// The task gives the least watermark over both inputs' channels.
		if s.Watermark <= o.mark {
			return nil
		}
		o.mark = s.Watermark
		if err := o.closeUpTo(ctx, out); err != nil {
			return err
		}
	case exec.EndOfStream:
		if o.ended[input] {
			return nil
		}
		o.ended[input] = true
		if !o.ended[0] || !o.ended[1] {
			return nil
		}
		o.mark = math.MaxInt64
		if err := o.closeUpTo(ctx, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

func (o *windowJoinOp) Close(ctx context.Context) error {
	for e, w := range o.windows {
		w.Close(ctx)
		delete(o.windows, e)
	}
	return nil
}

func (o *windowJoinOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
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

func (o *windowJoinOp) RestoreState(ctx context.Context, data []byte) error {
	var st windowAggState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("window_join: bad checkpoint state: %w", err)
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
