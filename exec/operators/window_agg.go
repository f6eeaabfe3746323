package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hummer-db/hummer/exec"
)

// WindowAggConfig configures kind "window_agg": the aggregation Agg (a
// GROUP BY whose keys include a window's end) over an input with a
// watermark, run per window of event time. End is the position, among
// Agg.GroupBy's keys, of the window's end (a timestamp, exclusive).
type WindowAggConfig struct {
	Agg HashAggConfig `json:"agg"`
	End int           `json:"end"`
	// Late, for a phase that reads the rows themselves (not AggFinal),
	// sends its late rows to the job's late-rows table.
	Late *LateConfig `json:"late,omitempty"`
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
	cfg    WindowAggConfig
	spec   exec.OperatorSpec
	endCol int // the input column of the window's end
	windowed[*hashAggOp]
	// disk is the state on the disk backend (window_agg_disk.go), nil on
	// memory.
	disk *windowDisk
}

var (
	_ exec.Operator     = (*windowAggOp)(nil)
	_ exec.Checkpointed = (*windowAggOp)(nil)
	_ exec.LateEmitter  = (*windowAggOp)(nil)
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
	o := &windowAggOp{cfg: cfg, spec: spec, endCol: cfg.Agg.GroupBy[cfg.End]}
	if cfg.Agg.Phase == AggFinal {
		o.endCol = cfg.End // a final aggregate's input has the keys first
		cfg.Late = nil     // and its rows are partial aggregates, never late
	}
	o.windowed = newWindowed("window_agg", func(ctx context.Context, tc *exec.TaskContext, end int64) (*hashAggOp, error) {
		w, err := newHashAgg(cfg.Agg, spec)
		if err == nil {
			err = w.Open(ctx, tc)
		}
		if err == nil && o.disk != nil {
			err = o.disk.attach(w, end)
		}
		return w, err
	})
	o.lateCfg = cfg.Late
	return o, nil
}

func (o *windowAggOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.start(tc)
	if o.stateBackend(tc) == StateDisk {
		return o.openDisk(tc)
	}
	return nil
}

func (o *windowAggOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	err := o.route(ctx, b, o.endCol, func(w *hashAggOp, b exec.Batch) error { return w.ProcessBatch(ctx, 0, b, out) })
	if err == nil && o.disk != nil {
		err = o.evictIfFull(ctx, out)
	}
	return err
}

func (o *windowAggOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if o.disk != nil {
		return o.signalDisk(ctx, s, out)
	}
	return o.signal(ctx, s, out)
}

func (o *windowAggOp) Close(ctx context.Context) error {
	o.closeAll(ctx)
	if o.disk != nil {
		o.disk.db.Close()
		o.disk = nil
	}
	return nil
}

func (o *windowAggOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.disk != nil && (checkpoint > 0 || len(o.wins) > 0) {
		p, err := o.SnapshotStateAsync(ctx, checkpoint)
		return finishNow(ctx, p, err)
	}
	return o.snapshot(ctx, checkpoint)
}

func (o *windowAggOp) RestoreState(ctx context.Context, data []byte) error {
	if isDiskState(data, windowAggDiskMagic) || o.disk != nil {
		return o.restoreDisk(ctx, data)
	}
	return o.restore(ctx, data)
}
