package operators

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// WatermarkConfig configures kind "watermark", which follows the source of a
// table declared WATERMARK FOR col AS Expr: it passes the batches on, keeping
// their first Keep columns (the ones after are read by Expr only), and after
// each batch that raised it, says the watermark is the largest Expr seen so
// far (Flink's bounded out-of-orderness: a row's Expr is how far it says
// event time has got).
type WatermarkConfig struct {
	Expr *expr.Expr `json:"expr"`
	Keep int        `json:"keep"`
	// FromSource says the source emits the watermarks itself (a Kafka
	// table's, per partition): the operator passes them on and computes none.
	FromSource bool `json:"from_source,omitempty"`
	// Proctime says the operator follows a projection of PROCTIME(), whose
	// time is the wall clock's: the watermark is the current time, said
	// after each batch and at each tick (exec.Ticker), rows or not, so that
	// windows of processing time close when the clock passes their end.
	// Watermarks and idleness from upstream (event time) are dropped.
	Proctime bool `json:"proctime,omitempty"`
}

// watermarkOp is kind "watermark" (see WatermarkConfig). Its watermark is
// checkpointed, so that a restarted job does not go back in event time. A
// watermark from upstream (a source that has its own) is taken when it is
// higher; end of stream goes on as it comes, and means the end of event time.
type watermarkOp struct {
	cfg  WatermarkConfig
	m    *exec.TaskMetrics // Watermark: the last one emitted, for SHOW PROCESSLIST
	mem  memory.Allocator
	mark int64 // microseconds; math.MinInt64 before the first row
	// idle is set when an Idle signal went downstream: the next rows take
	// the channel back, with the watermark as it is.
	idle bool
}

var (
	_ exec.Operator     = (*watermarkOp)(nil)
	_ exec.Checkpointed = (*watermarkOp)(nil)
	_ exec.Ticker       = (*watermarkOp)(nil)
)

func newWatermarkOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg WatermarkConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("watermark: bad config: %w", err)
	}
	if cfg.Expr == nil && !cfg.Proctime {
		return nil, fmt.Errorf("watermark: no expression")
	}
	return &watermarkOp{cfg: cfg, mark: math.MinInt64}, nil
}

func (o *watermarkOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	if o.m = tc.Metrics; o.m == nil {
		o.m = &exec.TaskMetrics{}
	}
	return nil
}

func (o *watermarkOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if b.NumRows() == 0 {
		return nil
	}
	if o.cfg.FromSource {
		return o.pass(ctx, b, out)
	}
	if o.cfg.Proctime {
		if err := o.pass(ctx, b, out); err != nil {
			return err
		}
		return o.Tick(ctx, time.Now(), out)
	}
	res, err := expr.Eval(o.cfg.Expr, b.Rec, o.mem)
	if err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	high, ok := maxTimestamp(res)
	res.Release()
	if err := o.pass(ctx, b, out); err != nil {
		return err
	}
	if ok && high > o.mark {
		o.mark = high
	} else if !o.idle || o.mark == math.MinInt64 {
		return nil
	}
	o.idle = false
	o.m.Watermark.Store(o.mark)
	return out.CollectSignal(ctx, exec.Signal{Kind: exec.Watermark, Watermark: o.mark})
}

// pass sends b on with its first Keep columns.
func (o *watermarkOp) pass(ctx context.Context, b exec.Batch, out exec.Collector) error {
	if int(b.Rec.NumCols()) > o.cfg.Keep {
		cols := b.Rec.Columns()[:o.cfg.Keep]
		fields := b.Rec.Schema().Fields()[:o.cfg.Keep]
		b.Rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, b.Rec.NumRows())
		defer b.Rec.Release()
	}
	return out.Collect(ctx, b)
}

// maxTimestamp returns the largest value of a timestamp array, ok false when
// all are NULL.
func maxTimestamp(a arrow.Array) (high int64, ok bool) {
	ts, isTS := a.(*array.Timestamp)
	if !isTS {
		return 0, false
	}
	high = math.MinInt64
	vals := ts.TimestampValues()
	if ts.NullN() == 0 {
		for _, v := range vals {
			high = max(high, int64(v))
		}
		return high, len(vals) > 0
	}
	for i, v := range vals {
		if ts.IsValid(i) {
			high, ok = max(high, int64(v)), true
		}
	}
	return high, ok
}

// Tick says, in Proctime mode, that processing time has reached now.
func (o *watermarkOp) Tick(ctx context.Context, now time.Time, out exec.Collector) error {
	us := now.UnixMicro()
	if !o.cfg.Proctime || us <= o.mark {
		return nil
	}
	o.mark = us
	o.m.Watermark.Store(o.mark)
	return out.CollectSignal(ctx, exec.Signal{Kind: exec.Watermark, Watermark: o.mark})
}

func (o *watermarkOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if o.cfg.Proctime && (s.Kind == exec.Watermark || s.Kind == exec.Idle) {
		return nil
	}
	switch s.Kind {
	case exec.Watermark:
		if s.Watermark <= o.mark {
			return nil
		}
		o.mark, o.idle = s.Watermark, false
		o.m.Watermark.Store(o.mark)
	case exec.Idle:
		o.idle = true
		o.m.Watermark.Store(-1)
	}
	return out.CollectSignal(ctx, s)
}

func (o *watermarkOp) Close(ctx context.Context) error { return nil }

// SnapshotState is the watermark, 8 bytes.
func (o *watermarkOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(o.mark)), nil
}

func (o *watermarkOp) RestoreState(ctx context.Context, data []byte) error {
	if len(data) != 8 {
		return fmt.Errorf("watermark: bad checkpoint state of %d bytes", len(data))
	}
	o.mark = int64(binary.BigEndian.Uint64(data))
	return nil
}
