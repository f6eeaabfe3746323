package operators

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// SessionAggConfig configures kind "session_agg": the aggregation Agg (one
// phase) grouped by Keys and by a session window of event time, Flink's
// SESSION(ts, gap): the rows of a key whose times are less than the gap apart
// are one session, from the first time to the last plus the gap. Its input
// gives each row its own session (sql/dialect_window.go): Start is ts, End
// ts + gap; the operator merges them.
type SessionAggConfig struct {
	Agg   HashAggConfig `json:"agg"`
	Keys  []int         `json:"keys"`
	Start int           `json:"start"`
	End   int           `json:"end"`
	// Late sends the late rows to the job's late-rows table.
	Late *LateConfig `json:"late,omitempty"`
	// StateBackend, "memory" or "disk" (SET state_backend), says where the
	// rows held live (session_agg_disk.go); "" leaves it to the TaskManager
	// (TaskContext.StateBackend).
	StateBackend string `json:"state_backend,omitempty"`
}

// sessionAggOp is kind "session_agg" (see SessionAggConfig). It holds the
// rows of the sessions still open. When the watermark passes, it sorts them
// by key and time, merges each key's rows into sessions, and aggregates the
// rows of the sessions whose end the watermark has reached (their last
// microsecond, as for any window) into rows it emits once, keeping the
// others' rows. A row whose own session ([ts, ts + gap)) is already behind
// the watermark is late: dropped and counted. End of stream closes every
// session; without a watermark (a bounded input) that is when all are
// emitted.
type sessionAggOp struct {
	cfg     SessionAggConfig
	spec    exec.OperatorSpec
	tc      *exec.TaskContext
	mem     memory.Allocator
	late    lateRows
	pending []exec.Batch // retained
	mark    int64
	// soonest is a bound below the last instant (end - 1) of every session
	// held: no session closes before the watermark reaches it, so close does
	// not sort the rows held at every watermark (a session's end only grows
	// as rows join it; a new row's own session ends at its End).
	soonest int64
	keys    sortKeys
	order   sortKeys
	// disk is the state on the disk backend (session_agg_disk.go), nil on
	// memory.
	disk *sessionDisk
}

var (
	_ exec.Operator          = (*sessionAggOp)(nil)
	_ exec.AsyncCheckpointed = (*sessionAggOp)(nil)
	_ exec.LateEmitter       = (*sessionAggOp)(nil)
)

func newSessionAggOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg SessionAggConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("session_agg: bad config: %w", err)
	}
	cfg.Agg.Emit, cfg.Agg.Phase = AggEmitFinal, AggComplete
	if _, err := newHashAgg(cfg.Agg, spec); err != nil {
		return nil, err
	}
	return &sessionAggOp{cfg: cfg, spec: spec, mark: math.MinInt64, soonest: math.MaxInt64}, nil
}

func (o *sessionAggOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.tc = tc
	o.mem = vector.TaskAlloc(tc)
	o.late = newLateRows(o.cfg.Late, tc)
	return o.openDisk(tc)
}

// EmitsLate reports whether the operator sends its late rows on.
func (o *sessionAggOp) EmitsLate() bool { return o.cfg.Late != nil }

func (o *sessionAggOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	ends, ok := b.Rec.Column(o.cfg.End).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("session_agg: the session's end is %s, not a timestamp", b.Rec.Column(o.cfg.End).DataType())
	}
	keep := make([]int32, 0, n)
	var late []int32
	for i := range n {
		if e := int64(ends.Value(i)); ends.IsValid(i) && e-1 > o.mark {
			keep = append(keep, int32(i))
			o.soonest = min(o.soonest, e-1)
		} else {
			late = append(late, int32(i))
		}
	}
	if err := o.late.emit(ctx, b, late, o.mark); err != nil {
		return err
	}
	switch {
	case len(keep) == n:
		b.Rec.Retain()
		o.pending = append(o.pending, b)
	case len(keep) > 0:
		rec, err := vector.GatherRecord(o.mem, b.Rec, keep)
		if err != nil {
			return err
		}
		o.pending = append(o.pending, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, keep)})
	default:
		return nil
	}
	if o.disk != nil {
		return o.cached(o.pending[len(o.pending)-1])
	}
	return nil
}

func (o *sessionAggOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		if s.Watermark <= o.mark {
			return nil
		}
		o.mark = s.Watermark
		if err := o.close(ctx, out); err != nil {
			return err
		}
	case exec.EndOfStream:
		o.mark = math.MaxInt64
		if err := o.close(ctx, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

// close merges the rows held into sessions and emits the aggregates of the
// sessions that have closed.
func (o *sessionAggOp) close(ctx context.Context, out exec.Collector) error {
	if o.disk != nil && o.disk.written {
		return o.closeDisk(ctx, out)
	}
	if len(o.pending) == 0 || o.soonest > o.mark {
		return nil
	}
	if o.disk != nil {
		defer func() {
			o.disk.bytes = 0
			for _, b := range o.pending {
				o.disk.bytes += vector.RecordBytes(b.Rec)
			}
		}()
	}
	held := 0
	for _, b := range o.pending {
		held += b.NumRows()
	}
	rec, err := concatBatches(o.mem, o.pending, held)
	if err != nil {
		return err
	}
	ops := batchOps(o.pending)
	defer rec.Release()
	keySpecs := make([]SortKeySpec, len(o.cfg.Keys))
	for i, k := range o.cfg.Keys {
		keySpecs[i] = SortKeySpec{Col: k}
	}
	if err := o.keys.encode(rec, keySpecs); err != nil {
		return err
	}
	if err := o.order.encode(rec, append(keySpecs, SortKeySpec{Col: o.cfg.Start})); err != nil {
		return err
	}
	n := int(rec.NumRows())
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return bytes.Compare(o.order.key(int(a)), o.order.key(int(b))) })
	starts := rec.Column(o.cfg.Start).(*array.Timestamp).TimestampValues()
	ends := rec.Column(o.cfg.End).(*array.Timestamp).TimestampValues()
	var closed, open []int32
	sStart, sEnd := make([]int64, n), make([]int64, n) // by row: its session's bounds
	o.soonest = math.MaxInt64
	for lo := 0; lo < n; {
		// The session from perm[lo]: rows of the same key starting before its end.
		first := perm[lo]
		s, e := int64(starts[first]), int64(ends[first])
		hi := lo + 1
		for hi < n && bytes.Equal(o.keys.key(int(perm[hi])), o.keys.key(int(first))) && int64(starts[perm[hi]]) < e {
			e = max(e, int64(ends[perm[hi]]))
			hi++
		}
		for _, r := range perm[lo:hi] {
			sStart[r], sEnd[r] = s, e
		}
		if e-1 <= o.mark {
			closed = append(closed, perm[lo:hi]...)
		} else {
			open = append(open, perm[lo:hi]...)
			o.soonest = min(o.soonest, e-1)
		}
		lo = hi
	}
	for _, b := range o.pending {
		b.Rec.Release()
	}
	o.pending = nil
	if len(open) > 0 {
		kept, err := vector.GatherRecord(o.mem, rec, open)
		if err != nil {
			return err
		}
		o.pending = []exec.Batch{{Rec: kept, Ops: vector.GatherOps(ops, open)}}
	}
	if len(closed) == 0 {
		return nil
	}
	rows, err := vector.GatherRecord(o.mem, rec, closed)
	if err != nil {
		return err
	}
	defer rows.Release()
	// The rows with their sessions' bounds in place of their own.
	cols := slices.Clone(rows.Columns())
	bound := func(v []int64) arrow.Array {
		bld := array.NewTimestampBuilder(o.mem, rows.Column(o.cfg.Start).DataType().(*arrow.TimestampType))
		defer bld.Release()
		bld.Reserve(len(closed))
		for _, r := range closed {
			bld.UnsafeAppend(arrow.Timestamp(v[r]))
		}
		return bld.NewArray()
	}
	startArr, endArr := bound(sStart), bound(sEnd)
	defer startArr.Release()
	defer endArr.Release()
	cols[o.cfg.Start], cols[o.cfg.End] = startArr, endArr
	sessions := array.NewRecordBatch(rows.Schema(), cols, rows.NumRows())
	defer sessions.Release()
	agg, err := newHashAgg(o.cfg.Agg, o.spec)
	if err != nil {
		return err
	}
	defer agg.Close(ctx)
	if err := agg.Open(ctx, o.tc); err != nil {
		return err
	}
	if err := agg.ProcessBatch(ctx, 0, exec.Batch{Rec: sessions, Ops: vector.GatherOps(ops, closed)}, out); err != nil {
		return err
	}
	return agg.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rowsOnly{out})
}

// Close frees the rows held and the sort keys' buffers, which would
// otherwise stay as long as the operator is reachable (a finished job's tasks
// are, while it is listed).
func (o *sessionAggOp) Close(ctx context.Context) error {
	for _, b := range o.pending {
		b.Rec.Release()
	}
	o.pending = nil
	o.keys, o.order = sortKeys{}, sortKeys{}
	if o.disk != nil {
		o.disk.db.Close()
		o.disk = nil
	}
	return nil
}

// SnapshotState is the watermark and the rows held (Arrow IPC); change kinds
// other than inserts are not kept (the input of a session window is a
// stream's rows, all inserts). On the disk backend it is the DB's
// checkpoint (SnapshotStateAsync).
func (o *sessionAggOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	p, err := o.SnapshotStateAsync(ctx, checkpoint)
	return finishNow(ctx, p, err)
}

func (o *sessionAggOp) snapshotMemory(ctx context.Context, checkpoint int64) ([]byte, error) {
	mark := binary.BigEndian.AppendUint64(nil, uint64(o.mark))
	if len(o.pending) == 0 {
		return state.Encode("SESS", 1, mark, nil), nil
	}
	recs := make([]arrow.RecordBatch, len(o.pending))
	for i, b := range o.pending {
		recs[i] = b.Rec
	}
	ipc, err := state.WriteIPC(o.mem, recs[0].Schema(), recs...)
	if err != nil {
		return nil, err
	}
	return state.Encode("SESS", 1, mark, ipc), nil
}

func (o *sessionAggOp) RestoreState(ctx context.Context, data []byte) error {
	if isDiskState(data, sessionDiskMagic) {
		return o.restoreDisk(ctx, data)
	}
	secs, err := state.Decode("session_agg", "SESS", 1, data)
	if err != nil {
		return err
	}
	if len(secs) != 2 || len(secs[0]) != 8 {
		return fmt.Errorf("session_agg: bad checkpoint state")
	}
	o.mark = int64(binary.BigEndian.Uint64(secs[0]))
	if len(secs[1]) == 0 {
		return nil
	}
	_, recs, err := state.ReadIPC(o.mem, secs[1])
	if err != nil {
		return err
	}
	for _, r := range recs {
		o.pending = append(o.pending, exec.Batch{Rec: r})
		o.soonest = math.MinInt64 // not known: the next watermark looks
		if o.disk != nil {
			o.disk.bytes += vector.RecordBytes(r)
		}
	}
	return nil
}
