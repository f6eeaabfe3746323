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
//
// StateBackend, "memory" or "disk" (SET state_backend), says where the open
// windows' rows live (window_spool.go); "" leaves it to the TaskManager
// (TaskContext.StateBackend).
type WindowJoinConfig struct {
	Join         JoinConfig `json:"join"`
	LeftEnd      int        `json:"left_end"`
	RightEnd     int        `json:"right_end"`
	StateBackend string     `json:"state_backend,omitempty"`
}

// windowJoinOp is kind "window_join" (see WindowJoinConfig). It keeps one
// bounded hash join per window that is open, fed both sides' rows of the
// window; when the watermark (the least of both sides') reaches the window's
// last microsecond, both sides of that join end, its rows go out (once:
// the output is append-only) and it is freed. Rows of a window already
// closed are late: dropped and counted. End of stream closes every window.
// It is Checkpointed: each open window's join, and the watermark. On the
// disk backend its windows' rows wait in a spool (window_spool.go) and each
// window's join runs when it closes.
type windowJoinOp struct {
	cfg   WindowJoinConfig
	ended [2]bool
	spool *windowSpool
	windowed[windowOperator]
}

var (
	_ exec.Operator          = (*windowJoinOp)(nil)
	_ exec.AsyncCheckpointed = (*windowJoinOp)(nil)
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
	o.windowed = newWindowed("window_join", func(ctx context.Context, tc *exec.TaskContext, end int64) (windowOperator, error) {
		if o.spool == nil {
			op, err := newHashJoinOp(inner)
			if err != nil {
				return nil, err
			}
			return op.(*hashJoinOp), op.Open(ctx, tc)
		}
		// At its close the window's join spills past the spool's cache
		// bound, so that one window larger than memory closes within it.
		jc := cfg.Join
		jc.MemoryLimit = o.spool.limit
		spilling := inner
		spilling.Config = exec.MustConfig(jc)
		return &spoolWin{sp: o.spool, end: end, open: func(ctx context.Context) (exec.Operator, error) {
			op, err := newHashJoinOp(spilling)
			if err != nil {
				return nil, err
			}
			return op, op.Open(ctx, tc)
		}}, nil
	})
	return o, nil
}

func (o *windowJoinOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.start(tc)
	if spoolBackend(o.cfg.StateBackend, tc) == StateDisk {
		sp, err := openSpool("window_join", tc, o.mem)
		if err != nil {
			return err
		}
		o.spool = sp
	}
	return nil
}

func (o *windowJoinOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	col := o.cfg.LeftEnd
	if input == 1 {
		col = o.cfg.RightEnd
	}
	return o.route(ctx, b, col, func(w windowOperator, b exec.Batch) error { return w.ProcessBatch(ctx, input, b, out) })
}

// finish ends a window's join: the build side (1), then the probe side (0).
func (o *windowJoinOp) finish(ctx context.Context) func(w windowOperator, rows exec.Collector) error {
	return func(w windowOperator, rows exec.Collector) error {
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
		news, err := o.advance(ctx, s.Watermark, out, o.finish(ctx))
		if err == nil && o.spool != nil {
			err = o.spool.deleteClosed()
		}
		if err != nil || !news {
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
		_, err := o.advance(ctx, math.MaxInt64, out, o.finish(ctx))
		if err == nil && o.spool != nil {
			err = o.spool.deleteClosed()
		}
		if err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

func (o *windowJoinOp) Close(ctx context.Context) error {
	o.closeAll(ctx)
	if o.spool != nil {
		o.spool.close()
		o.spool = nil
	}
	return nil
}

func (o *windowJoinOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.spool == nil {
		return o.snapshot(ctx, checkpoint)
	}
	p, err := o.SnapshotStateAsync(ctx, checkpoint)
	return finishNow(ctx, p, err)
}

// SnapshotStateAsync takes the disk backend's checkpoint, leaving the upload
// of its files to the task's background; the memory backend's state it
// takes whole.
func (o *windowJoinOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.spool == nil {
		return donePending(o.snapshot(ctx, checkpoint))
	}
	return snapshotSpool(ctx, o.spool, &o.windowed, checkpoint)
}

func (o *windowJoinOp) RestoreState(ctx context.Context, data []byte) error {
	if o.spool != nil {
		return restoreSpool(ctx, o.spool, &o.windowed, data)
	}
	return restoreMemory(ctx, &o.windowed, data)
}
