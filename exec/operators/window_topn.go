package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hummer-db/hummer/exec"
)

// WindowTopNConfig configures kind "window_topn": Top-N (TopN, whose
// Partition includes the window's end) over a window table function's rows,
// per window of event time. End is the input column of the window's end (a
// timestamp, exclusive).
type WindowTopNConfig struct {
	TopN TopNConfig `json:"topn"`
	End  int        `json:"end"`
	// Late sends the late rows to the job's late-rows table.
	Late *LateConfig `json:"late,omitempty"`
	// StateBackend, "memory" or "disk" (SET state_backend), says where the
	// open windows' rows live (window_spool.go); "" leaves it to the
	// TaskManager (TaskContext.StateBackend).
	StateBackend string `json:"state_backend,omitempty"`
}

// windowTopNOp is kind "window_topn" (see WindowTopNConfig), Flink's Window
// Top-N: one bounded topn per open window, which emits that window's top
// rows once, as Inserts, when the watermark passes the window's last instant
// (windows.go); its output is append-only. Rows of closed windows are late:
// dropped and counted. Its input must be append-only. It is Checkpointed:
// every open window's topn, and the watermark. On the disk backend its
// windows' rows wait in a spool (window_spool.go) and each window's topn
// runs when it closes.
type windowTopNOp struct {
	cfg   WindowTopNConfig
	spool *windowSpool
	windowed[windowOperator]
}

var (
	_ exec.Operator          = (*windowTopNOp)(nil)
	_ exec.AsyncCheckpointed = (*windowTopNOp)(nil)
	_ exec.LateEmitter       = (*windowTopNOp)(nil)
)

func newWindowTopNOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg WindowTopNConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("window_topn: bad config: %w", err)
	}
	cfg.TopN.Final, cfg.TopN.Retracts = true, false
	if _, err := newTopN(cfg.TopN, spec); err != nil { // check the config once
		return nil, err
	}
	if cfg.End < 0 || cfg.End >= len(spec.Out) {
		return nil, fmt.Errorf("window_topn: window end column %d of %d", cfg.End, len(spec.Out))
	}
	o := &windowTopNOp{cfg: cfg}
	topn := func(ctx context.Context, tc *exec.TaskContext) (*topnOp, error) {
		w, err := newTopN(cfg.TopN, spec)
		if err == nil {
			err = w.Open(ctx, tc)
		}
		return w, err
	}
	o.windowed = newWindowed("window_topn", func(ctx context.Context, tc *exec.TaskContext, end int64) (windowOperator, error) {
		if o.spool == nil {
			return topn(ctx, tc)
		}
		return &spoolWin{sp: o.spool, end: end, open: func(ctx context.Context) (exec.Operator, error) { return topn(ctx, tc) }}, nil
	})
	o.lateCfg = cfg.Late
	return o, nil
}

func (o *windowTopNOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.start(tc)
	if spoolBackend(o.cfg.StateBackend, tc) == StateDisk {
		sp, err := openSpool("window_topn", tc, o.mem)
		if err != nil {
			return err
		}
		o.spool = sp
	}
	return nil
}

func (o *windowTopNOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	for _, op := range b.Ops {
		if op == exec.Delete || op == exec.UpdateBefore {
			return fmt.Errorf("window_topn: a retraction in an append-only input")
		}
	}
	return o.route(ctx, b, o.cfg.End, func(w windowOperator, b exec.Batch) error { return w.ProcessBatch(ctx, 0, b, out) })
}

func (o *windowTopNOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	err := o.signal(ctx, s, out)
	if err == nil && o.spool != nil {
		err = o.spool.deleteClosed()
	}
	return err
}

func (o *windowTopNOp) Close(ctx context.Context) error {
	o.closeAll(ctx)
	if o.spool != nil {
		o.spool.close()
		o.spool = nil
	}
	return nil
}

func (o *windowTopNOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.spool == nil {
		return o.snapshot(ctx, checkpoint)
	}
	p, err := o.SnapshotStateAsync(ctx, checkpoint)
	return finishNow(ctx, p, err)
}

// SnapshotStateAsync takes the disk backend's checkpoint, leaving the upload
// of its files to the task's background; the memory backend's state it
// takes whole.
func (o *windowTopNOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.spool == nil {
		return donePending(o.snapshot(ctx, checkpoint))
	}
	return snapshotSpool(ctx, o.spool, &o.windowed, checkpoint)
}

func (o *windowTopNOp) RestoreState(ctx context.Context, data []byte) error {
	if o.spool != nil {
		return restoreSpool(ctx, o.spool, &o.windowed, data)
	}
	return restoreMemory(ctx, &o.windowed, data)
}
