package operators

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// OverAggConfig configures kind "over_agg": the window functions of Window
// (aggregates whose frames end at the current row: count, sum, avg, min,
// max) over an append-only input whose first order key, Window.Order[0], is
// a timestamp with a watermark, ascending.
type OverAggConfig struct {
	Window WindowConfig `json:"window"`
	// Late sends the late rows to the job's late-rows table.
	Late *LateConfig `json:"late,omitempty"`
}

// overAggOp is kind "over_agg" (OverAggConfig), Flink's OVER aggregation: it
// holds each row until the watermark passes its time, then sends it, in the
// order of the window (partition, then time, rows of one time in the order
// they came), with its functions over its frame; the output is append-only,
// the input's columns then the functions'. A row at or before the watermark
// already passed, or without a time, is late: dropped and counted
// (TaskMetrics.LateRows).
//
// It keeps the rows not sent yet and, of those sent, the ones a later row's
// frame can reach: per partition the last N of a ROWS frame of N PRECEDING,
// those within a RANGE frame's reach (the greatest gap seen between a row's
// time and its frame's start) of the watermark. At each watermark that passes
// rows it computes the functions of kind "window" over the kept rows up to
// the watermark of the partitions with rows due, and sends the new ones: the work is bounded by the frames,
// and the answer is the batch operator's by construction. An unbounded
// preceding frame would keep every row: the planner refuses it.
//
// It is Checkpointed: the kept rows, which of them were sent, the widest
// RANGE reach seen and the watermark.
type overAggOp struct {
	cfg    OverAggConfig
	spec   exec.OperatorSpec
	in     *arrow.Schema // the input's
	flag   *arrow.Schema // the input's and a boolean: sent before
	out    *arrow.Schema
	ts     int // the time column
	rowsN  int64
	rangeK bool // a RANGE frame with an offset: keep by reach
	mem    memory.Allocator
	tc     *exec.TaskContext
	late   lateRows

	parts []arrow.RecordBatch // the kept rows, in the order they came
	times []int64             // each kept row's time
	sent  []bool              // each kept row's: sent already
	reach int64               // the widest time minus frame start seen
	mark  int64
}

var (
	_ exec.Operator     = (*overAggOp)(nil)
	_ exec.Checkpointed = (*overAggOp)(nil)
	_ exec.LateEmitter  = (*overAggOp)(nil)
)

func newOverAggOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg OverAggConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("over_agg: bad config: %w", err)
	}
	w := cfg.Window
	if len(w.Order) == 0 || w.Order[0].Desc {
		return nil, fmt.Errorf("over_agg: the first order key must be a time, ascending")
	}
	nIn := len(spec.Out) - len(w.Funcs)
	if nIn <= 0 || w.Order[0].Col >= nIn {
		return nil, fmt.Errorf("over_agg: %d output columns for %d functions", len(spec.Out), len(w.Funcs))
	}
	o := &overAggOp{cfg: cfg, spec: spec, out: spec.Out.Arrow(), ts: w.Order[0].Col, mark: math.MinInt64}
	o.in = arrow.NewSchema(o.out.Fields()[:nIn], nil)
	if o.in.Field(o.ts).Type.ID() != arrow.TIMESTAMP {
		return nil, fmt.Errorf("over_agg: the time column is %s", o.in.Field(o.ts).Type)
	}
	o.flag = arrow.NewSchema(append(slices.Clone(o.in.Fields()), arrow.Field{Name: "over_sent", Type: arrow.FixedWidthTypes.Boolean}), nil)
	for _, f := range w.Funcs {
		switch f.Func {
		case "count", "sum", "avg", "min", "max":
		default:
			return nil, fmt.Errorf("over_agg: %s over a stream is not supported", f.Func)
		}
		fr := f.Frame
		if fr.StartUnbounded || fr.EndUnbounded || fr.Rows && (fr.End != 0 || fr.Start > 0) || !fr.Rows && fr.EndOffset {
			return nil, fmt.Errorf("over_agg: %s's frame must start a bounded way before the current row and end at it", f.Func)
		}
		if fr.Rows {
			o.rowsN = max(o.rowsN, -fr.Start)
		} else if fr.StartOffset {
			o.rangeK = true
		}
	}
	return o, nil
}

func (o *overAggOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem, o.tc = vector.TaskAlloc(tc), tc
	o.late = newLateRows(o.cfg.Late, tc)
	return nil
}

// EmitsLate reports whether the operator sends its late rows on.
func (o *overAggOp) EmitsLate() bool { return o.cfg.Late != nil }

func (o *overAggOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	for _, op := range b.Ops {
		if op != exec.Insert {
			return fmt.Errorf("over_agg: %s rows are not supported: an OVER aggregation over a stream reads rows that are only inserted", op)
		}
	}
	tcol := b.Rec.Column(o.ts).(*array.Timestamp)
	var keep, late []int32
	for i := range int(b.Rec.NumRows()) {
		if tcol.IsNull(i) || int64(tcol.Value(i)) <= o.mark {
			late = append(late, int32(i))
			continue
		}
		keep = append(keep, int32(i))
		o.times = append(o.times, int64(tcol.Value(i)))
		o.sent = append(o.sent, false)
	}
	if err := o.late.emit(ctx, b, late, o.mark); err != nil {
		return err
	}
	if len(keep) == 0 {
		return nil
	}
	if o.rangeK {
		o.noteReach(b.Rec, keep)
	}
	rec, err := vector.GatherRecord(o.mem, b.Rec, keep)
	if err != nil {
		return err
	}
	o.parts = append(o.parts, rec)
	return nil
}

// noteReach widens reach by rows keep of rec: how far before its time each
// RANGE frame starts.
func (o *overAggOp) noteReach(rec arrow.RecordBatch, keep []int32) {
	tcol := rec.Column(o.ts).(*array.Timestamp)
	for _, f := range o.cfg.Window.Funcs {
		if f.Frame.Rows || !f.Frame.StartOffset {
			continue
		}
		sb, ok := rec.Column(f.Frame.StartBound).(*array.Timestamp)
		if !ok {
			continue
		}
		for _, i := range keep {
			if !sb.IsNull(int(i)) {
				o.reach = max(o.reach, int64(tcol.Value(int(i)))-int64(sb.Value(int(i))))
			}
		}
	}
}

func (o *overAggOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		if s.Watermark <= o.mark {
			return out.CollectSignal(ctx, s)
		}
		if err := o.advance(ctx, s.Watermark, out); err != nil {
			return err
		}
	case exec.EndOfStream:
		if err := o.advance(ctx, math.MaxInt64, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

// advance takes watermark mark: the rows at or before it go out.
func (o *overAggOp) advance(ctx context.Context, mark int64, out exec.Collector) error {
	o.mark = mark
	due := false
	for i, t := range o.times {
		if !o.sent[i] && t <= mark {
			due = true
			break
		}
	}
	if !due {
		return nil
	}
	all, err := o.kept()
	if err != nil {
		return err
	}
	defer all.Release()
	// The rows due, and the history of their partitions only: a partition
	// without rows due has nothing to send.
	dueParts := map[string]bool{}
	for i, t := range o.times {
		if !o.sent[i] && t <= mark {
			dueParts[o.partKey(all, i)] = true
		}
	}
	var upto []int32
	for i, t := range o.times {
		if t <= mark && (!o.sent[i] || dueParts[o.partKey(all, i)]) {
			upto = append(upto, int32(i))
		}
	}
	if err := o.compute(ctx, all, upto, out); err != nil {
		return err
	}
	for i, t := range o.times {
		if t <= mark {
			o.sent[i] = true
		}
	}
	return o.prune(all)
}

// kept returns the kept rows as one record, and keeps that record alone.
func (o *overAggOp) kept() (arrow.RecordBatch, error) {
	if len(o.parts) == 1 {
		o.parts[0].Retain()
		return o.parts[0], nil
	}
	cols := make([]arrow.Array, o.in.NumFields())
	for c := range cols {
		arrs := make([]arrow.Array, len(o.parts))
		for i, p := range o.parts {
			arrs[i] = p.Column(c)
		}
		a, err := array.Concatenate(arrs, o.mem)
		if err != nil {
			vector.ReleaseArrays(cols)
			return nil, err
		}
		cols[c] = a
	}
	rec, err := vector.MakeRecord(o.in, cols, len(o.times))
	if err != nil {
		return nil, err
	}
	o.release()
	rec.Retain()
	o.parts = []arrow.RecordBatch{rec}
	return rec, nil
}

// compute runs the functions of kind "window" over rows upto of all and
// sends those not sent before.
func (o *overAggOp) compute(ctx context.Context, all arrow.RecordBatch, upto []int32, out exec.Collector) error {
	sel, err := vector.GatherRecord(o.mem, all, upto)
	if err != nil {
		return err
	}
	fb := array.NewBooleanBuilder(o.mem)
	for _, i := range upto {
		fb.Append(o.sent[i])
	}
	flag := fb.NewArray()
	fb.Release()
	cols := append(slices.Clone(sel.Columns()), flag)
	for _, c := range sel.Columns() {
		c.Retain()
	}
	n := int(sel.NumRows())
	sel.Release()
	in, err := vector.MakeRecord(o.flag, cols, n)
	if err != nil {
		return err
	}
	defer in.Release()
	nIn := o.in.NumFields()
	innerOut := append(append(slices.Clone(o.spec.Out[:nIn]), types.Field{Name: "over_sent", Type: types.BoolType}), o.spec.Out[nIn:]...)
	w, err := newWindowOp(exec.OperatorSpec{Kind: "window", Config: exec.MustConfig(o.cfg.Window), Out: innerOut})
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	if err := w.Open(ctx, o.tc); err != nil {
		return err
	}
	send := &overAggSend{o: o, out: out}
	if err := w.ProcessBatch(ctx, 0, exec.Batch{Rec: in}, send); err != nil {
		return err
	}
	return w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, send)
}

// overAggSend passes on the window's rows not sent before, without the
// flag.
type overAggSend struct {
	o   *overAggOp
	out exec.Collector
}

func (s *overAggSend) Collect(ctx context.Context, b exec.Batch) error {
	nIn := s.o.in.NumFields()
	flag := b.Rec.Column(nIn).(*array.Boolean)
	var idx []int32
	for i := range int(b.Rec.NumRows()) {
		if !flag.Value(i) {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == 0 {
		return nil
	}
	src := append(slices.Clone(b.Rec.Columns()[:nIn]), b.Rec.Columns()[nIn+1:]...)
	cols, err := vector.GatherColumns(s.o.mem, nil, src, idx)
	if err != nil {
		return err
	}
	rec, err := vector.MakeRecord(s.o.out, cols, len(idx))
	if err != nil {
		return err
	}
	defer rec.Release()
	return s.out.Collect(ctx, exec.Batch{Rec: rec})
}

func (s *overAggSend) CollectSignal(context.Context, exec.Signal) error { return nil }

// prune drops, of the rows sent (all, the one kept record), those no later
// row's frame reaches.
func (o *overAggOp) prune(all arrow.RecordBatch) error {
	drop := make([]bool, len(o.times))
	for i, t := range o.times {
		drop[i] = o.sent[i] && (!o.rangeK || o.mark == math.MaxInt64 || t < o.mark-o.reach)
	}
	if o.rowsN > 0 {
		// Per partition, the last rowsN sent rows stay: walk the sent rows
		// from the latest in the window's order.
		var sent []int
		for i := range o.times {
			if o.sent[i] {
				sent = append(sent, i)
			}
		}
		slices.SortStableFunc(sent, func(a, b int) int {
			if o.times[a] != o.times[b] {
				return -cmpInt64(o.times[a], o.times[b])
			}
			return b - a
		})
		count := map[string]int64{}
		for _, i := range sent {
			k := o.partKey(all, i)
			if count[k] < o.rowsN {
				count[k]++
				drop[i] = false
			}
		}
	}
	var keep []int32
	for i, d := range drop {
		if !d {
			keep = append(keep, int32(i))
		}
	}
	if len(keep) == len(drop) {
		return nil
	}
	rec, err := vector.GatherRecord(o.mem, all, keep)
	if err != nil {
		return err
	}
	times, sent := make([]int64, len(keep)), make([]bool, len(keep))
	for j, i := range keep {
		times[j], sent[j] = o.times[i], o.sent[i]
	}
	o.release()
	o.times, o.sent = times, sent
	if len(keep) > 0 {
		o.parts = []arrow.RecordBatch{rec}
	} else {
		rec.Release()
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// partKey is row i's partition as text (ValueStr of each column, NULL
// marked apart).
func (o *overAggOp) partKey(rec arrow.RecordBatch, i int) string {
	var sb strings.Builder
	for _, c := range o.cfg.Window.Partition {
		col := rec.Column(c)
		if col.IsNull(i) {
			sb.WriteString("\x00N")
		} else {
			sb.WriteString("\x00V")
			sb.WriteString(col.ValueStr(i))
		}
	}
	return sb.String()
}

func (o *overAggOp) release() {
	for _, p := range o.parts {
		p.Release()
	}
	o.parts = nil
}

func (o *overAggOp) Close(ctx context.Context) error {
	o.release()
	o.times, o.sent = nil, nil
	return nil
}

const (
	overAggStateMagic   = "HOVR"
	overAggStateVersion = 1
)

// SnapshotState returns the kept rows as an Arrow IPC stream, then each
// one's sent flag, the reach and the watermark.
func (o *overAggOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	rows, err := state.WriteIPC(o.mem, o.in, o.parts...)
	if err != nil {
		return nil, fmt.Errorf("over_agg: snapshot: %w", err)
	}
	flags := make([]byte, len(o.sent))
	for i, s := range o.sent {
		if s {
			flags[i] = 1
		}
	}
	nums := binary.BigEndian.AppendUint64(nil, uint64(o.reach))
	nums = binary.BigEndian.AppendUint64(nums, uint64(o.mark))
	return state.Encode(overAggStateMagic, overAggStateVersion, rows, flags, nums), nil
}

func (o *overAggOp) RestoreState(ctx context.Context, data []byte) (err error) {
	defer state.Recover("over_agg", &err)
	secs, err := state.Decode("over_agg", overAggStateMagic, overAggStateVersion, data)
	if err != nil {
		return err
	}
	if len(secs) != 3 || len(secs[2]) != 16 {
		return fmt.Errorf("over_agg: %w", state.ErrBadState)
	}
	_, recs, err := state.ReadIPC(o.mem, secs[0])
	if err != nil {
		return fmt.Errorf("over_agg: restore: %w", err)
	}
	o.release()
	o.parts, o.times, o.sent = nil, nil, nil
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		o.parts = append(o.parts, rec)
		tcol := rec.Column(o.ts).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			o.times = append(o.times, int64(tcol.Value(i)))
		}
	}
	if len(secs[1]) != len(o.times) {
		o.release()
		return fmt.Errorf("over_agg: %d flags for %d rows: %w", len(secs[1]), len(o.times), state.ErrBadState)
	}
	for _, f := range secs[1] {
		o.sent = append(o.sent, f == 1)
	}
	o.reach = int64(binary.BigEndian.Uint64(secs[2][:8]))
	o.mark = int64(binary.BigEndian.Uint64(secs[2][8:]))
	return nil
}
