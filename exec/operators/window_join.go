package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/hummer-db/hummer/exec"
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
	cfg   WindowJoinConfig
	ended [2]bool
	windowed[*hashJoinOp]
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
	o := &windowJoinOp{cfg: cfg}
	o.windowed = newWindowed("window_join", func(ctx context.Context, tc *exec.TaskContext, _ int64) (*hashJoinOp, error) {
		op, err := newHashJoinOp(inner)
		if err != nil {
			return nil, err
		}
		w := op.(*hashJoinOp)
		return w, w.Open(ctx, tc)
	})
	return o, nil
}

func (o *windowJoinOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.start(tc)
	return nil
}

func (o *windowJoinOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	col := o.cfg.LeftEnd
	if input == 1 {
		col = o.cfg.RightEnd
	}
	return o.route(ctx, b, col, func(w *hashJoinOp, b exec.Batch) error { return w.ProcessBatch(ctx, input, b, out) })
}

// finish ends a window's join: the build side (1), then the probe side (0).
func (o *windowJoinOp) finish(ctx context.Context) func(w *hashJoinOp, rows exec.Collector) error {
	return func(w *hashJoinOp, rows exec.Collector) error {
		if err := w.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, rows); err != nil {
			return err
		}
		return w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rows)
	}
}

func (o *windowJoinOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		// The task gives the least watermark over both inputs' channels.
		if news, err := o.advance(ctx, s.Watermark, out, o.finish(ctx)); err != nil || !news {
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
		if _, err := o.advance(ctx, math.MaxInt64, out, o.finish(ctx)); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

func (o *windowJoinOp) Close(ctx context.Context) error {
	o.closeAll(ctx)
	return nil
}

func (o *windowJoinOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	return o.snapshot(ctx, checkpoint)
}

func (o *windowJoinOp) RestoreState(ctx context.Context, data []byte) error {
	return o.restore(ctx, data)
}
