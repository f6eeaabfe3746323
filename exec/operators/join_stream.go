package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// streamJoinOp is kind "stream_join" (StreamJoinConfig): Flink's and
// RisingWave's regular join of two inputs that never end, or that change. It
// keeps each side's rows in keyed state (streamJoinSide); a row arriving on
// either side is joined against the other side's state and then stored (an
// Insert or UpdateAfter) or removed (a Delete or UpdateBefore, of a row held:
// a retraction of a row it does not hold is dropped). Its output is a
// changelog of Insert and Delete rows: a retraction on either input deletes
// the joined rows its row produced.
//
// Outer joins keep, per held row, how many rows of the other side it matches
// (ON's keys and Extra). A row of a preserved side (left of a LEFT join, either
// of a FULL one) that matches nothing is emitted NULL-padded; when its first
// match arrives that row is retracted (a Delete of the NULL-padded row) before
// the joined rows, and when its last match is deleted it is emitted again.
// NULL keys never match.
//
// Within one batch the other side's rows do not change, so the candidate pairs
// of the whole batch are found at once and Extra evaluated on them in batches;
// the batch's own rows then update the state in order. Barriers pass through
// (it holds no output back); watermarks go on as the minimum of the inputs';
// EndOfStream once both ended.
//
// State is checkpointed (SnapshotState): each side's held rows with their
// copies, matches and time of last write, as Arrow IPC streams. With TTL set
// (SET state_ttl), a row not written for TTL of processing time is dropped
// from its side's state at the next Tick without emitting anything, as
// Flink's table.exec.state.ttl does: a later row of the other side no longer
// joins it, its retraction is dropped (the joined rows it produced stay), and
// the other side's rows it matched still count it as a match (an outer join
// does not emit their NULL-padded rows when their last live match goes), so
// answers over keys idle longer than the TTL are not exact.
type streamJoinOp struct {
	cfg   StreamJoinConfig
	out   *arrow.Schema
	extra *expr.Expr
	mem   memory.Allocator
	outer [2]bool // the side's rows are kept when nothing matches them
	side  [2]*streamJoinSide
	in    twoInputs
	ttl   time.Duration
	now   func() time.Time
	swept time.Time

	// scratch, per batch
	otherKey []int32
	mStart   []int32  // matched rows of input row i: mRows[mStart[i]:mStart[i+1]]
	mRows    []uint32 // ids in the other side's rows
	buf      joinItems

	// disk is the state on the disk backend (join_stream_disk.go), nil on
	// memory, where stateLimit bounds the rows held
	// (TaskContext.StateLimit; 0: none).
	disk       *joinDisk
	stateLimit int64
	label      string
}

// StreamJoinConfig configures kind "stream_join" (join_stream.go): input 0 is
// the left side, input 1 the right; either may be unbounded and carry
// retractions. Rows match when every LeftKeys[i] equals RightKeys[i] (NULL keys
// never match) and Extra (over left columns then right columns), if set, is
// true. Kind is "inner", "left", "right" or "full". Output: left columns
// (Left) then right columns (Right), as Insert and Delete changes. TTLMillis, when positive, drops
// a row from its side's state once it has not been written for that long in
// processing time (SET state_ttl).
type StreamJoinConfig struct {
	Kind      string       `json:"kind"`
	LeftKeys  []int        `json:"left_keys"`
	RightKeys []int        `json:"right_keys"`
	Extra     *expr.Expr   `json:"extra,omitempty"`
	Left      types.Schema `json:"left"`
	Right     types.Schema `json:"right"`
	TTLMillis int64        `json:"ttl_ms,omitempty"`
	// Interval, for kind "interval_join", bounds the pairs' times
	// (join_interval.go).
	Interval *IntervalBounds `json:"interval,omitempty"`
	// StateBackend, "memory" or "disk" (SET state_backend), says where the
	// held rows live (join_stream_disk.go); "" leaves it to the TaskManager.
	StateBackend string `json:"state_backend,omitempty"`
}

// streamJoinSide is one side's state. A distinct row has an id in rows, its
// join key an id in keys; members[key] lists the held rows of the key, and a
// held row's copies, matches (rows of the other side, counting copies, that
// one copy matches) and time of last write are kept by row id. rows and keys
// only grow: when most of their ids are no longer held, they are rebuilt from
// the held rows (compact).
type streamJoinSide struct {
	keyCols []int
	types   []arrow.DataType
	schema  *arrow.Schema // the side's columns
	keys    *state.KeyTable
	rows    *state.KeyTable
	members [][]uint32 // by key id
	rowKey  []uint32   // by row id
	pos     []int32    // by row id: index in members[rowKey], -1 when not held
	count   []int32    // by row id: copies held
	matches []int64    // by row id
	touched []int64    // by row id: Unix milliseconds of the last write
	live    int        // rows held (distinct)

	keyEnc, rowEnc state.RowKeys
	keyIDs, rowIDs []uint32
}

var (
	_ exec.Operator       = (*streamJoinOp)(nil)
	_ exec.Checkpointed   = (*streamJoinOp)(nil)
	_ exec.EndStateUnread = (*streamJoinOp)(nil)
	_ exec.Ticker         = (*streamJoinOp)(nil)
)

// EndStateUnread marks its state unread once its inputs have ended: it has
// sent all its changes by then.
func (o *streamJoinOp) EndStateUnread() {}

func newStreamJoinOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg StreamJoinConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("stream_join: bad config: %w", err)
	}
	o := &streamJoinOp{cfg: cfg, extra: cfg.Extra, out: spec.Out.Arrow(), now: time.Now, label: spec.Label,
		ttl: time.Duration(cfg.TTLMillis) * time.Millisecond}
	switch cfg.Kind {
	case "inner":
	case "left":
		o.outer[0] = true
	case "right":
		o.outer[1] = true
	case "full":
		o.outer = [2]bool{true, true}
	default:
		return nil, fmt.Errorf("stream_join: unsupported join kind %q", cfg.Kind)
	}
	if len(cfg.LeftKeys) != len(cfg.RightKeys) || len(cfg.LeftKeys) == 0 {
		return nil, fmt.Errorf("stream_join: %d left keys and %d right keys", len(cfg.LeftKeys), len(cfg.RightKeys))
	}
	nl := len(cfg.Left)
	if nl+len(cfg.Right) != o.out.NumFields() {
		return nil, fmt.Errorf("stream_join: %d left and %d right columns for an output of %d", nl, len(cfg.Right), o.out.NumFields())
	}
	if nl <= 0 || nl >= o.out.NumFields() {
		return nil, fmt.Errorf("stream_join: %d left columns of an output of %d", nl, o.out.NumFields())
	}
	fields := o.out.Fields()
	for s, part := range [2][]arrow.Field{fields[:nl], fields[nl:]} {
		keys := cfg.LeftKeys
		if s == 1 {
			keys = cfg.RightKeys
		}
		sd := &streamJoinSide{keyCols: keys, schema: arrow.NewSchema(part, nil)}
		for _, f := range part {
			sd.types = append(sd.types, f.Type)
		}
		for _, k := range keys {
			if k < 0 || k >= len(part) {
				return nil, fmt.Errorf("stream_join: key column %d out of range (%d columns)", k, len(part))
			}
		}
		o.side[s] = sd
	}
	return o, nil
}

func (o *streamJoinOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	for _, sd := range o.side {
		sd.reset()
	}
	o.stateLimit = tc.StateLimit
	return o.openDisk(tc)
}

func (sd *streamJoinSide) reset() {
	sd.release()
	sd.keys, sd.rows = state.NewKeyTable(), state.NewKeyTable()
}

// release frees the side's state: its tables, and the per-key and per-row
// slices and scratch beside them, which would otherwise stay as long as the
// operator is reachable (a finished job's tasks are, while it is listed).
func (sd *streamJoinSide) release() {
	if sd.keys != nil {
		sd.keys.Release()
		sd.rows.Release()
		sd.keys, sd.rows = nil, nil
	}
	sd.members, sd.rowKey, sd.pos, sd.count, sd.matches, sd.touched = nil, nil, nil, nil, nil, nil
	sd.keyIDs, sd.rowIDs = nil, nil
	sd.keyEnc, sd.rowEnc = state.RowKeys{}, state.RowKeys{}
	sd.live = 0
}

// index gives the n rows of cols (the side's columns) their ids: keyIDs and
// rowIDs, growing the per-row and per-key slices for new ones.
func (sd *streamJoinSide) index(cols []arrow.Array, n int) error {
	keyCols := make([]arrow.Array, len(sd.keyCols))
	for i, k := range sd.keyCols {
		keyCols[i] = cols[k]
	}
	if err := sd.keyEnc.Encode(keyCols, nil, n); err != nil {
		return err
	}
	sd.keyIDs = vector.GrowSlice(sd.keyIDs, n)
	sd.keys.InsertRows(&sd.keyEnc, sd.keyIDs)
	for len(sd.members) < sd.keys.Len() {
		sd.members = append(sd.members, nil)
	}
	if err := sd.rowEnc.Encode(cols, nil, n); err != nil {
		return err
	}
	sd.rowIDs = vector.GrowSlice(sd.rowIDs, n)
	sd.rows.InsertRows(&sd.rowEnc, sd.rowIDs)
	for i := range n {
		if g := sd.rowIDs[i]; int(g) == len(sd.rowKey) {
			sd.rowKey = append(sd.rowKey, sd.keyIDs[i])
			sd.pos = append(sd.pos, -1)
			sd.count = append(sd.count, 0)
			sd.matches = append(sd.matches, 0)
			sd.touched = append(sd.touched, 0)
		}
	}
	return nil
}

// hold makes row g held (its first copy).
func (sd *streamJoinSide) hold(g uint32) {
	k := sd.rowKey[g]
	sd.pos[g] = int32(len(sd.members[k]))
	sd.members[k] = append(sd.members[k], g)
	sd.live++
}

// drop makes row g no longer held.
func (sd *streamJoinSide) drop(g uint32) {
	k := sd.rowKey[g]
	m := sd.members[k]
	p := sd.pos[g]
	last := m[len(m)-1]
	m[p] = last
	sd.pos[last] = p
	sd.members[k] = m[:len(m)-1]
	sd.pos[g], sd.count[g], sd.matches[g] = -1, 0, 0
	sd.live--
}

func (o *streamJoinOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("stream_join: no input %d", input)
	}
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	me, other := o.side[input], o.side[1-input]
	if int(b.Rec.NumCols()) != len(me.types) {
		return fmt.Errorf("stream_join: a batch of %d columns on input %d, want %d", b.Rec.NumCols(), input, len(me.types))
	}
	if o.disk != nil {
		if err := o.load(input, b.Rec); err != nil {
			return fmt.Errorf("stream_join: %w", err)
		}
	}
	if err := me.index(b.Rec.Columns(), n); err != nil {
		return fmt.Errorf("stream_join: %w", err)
	}
	o.otherKey = vector.GrowSlice(o.otherKey, n)
	other.keys.LookupRows(&me.keyEnc, o.otherKey)
	if err := o.match(ctx, input, b.Rec); err != nil {
		return err
	}
	now := o.now().UnixMilli()
	o.buf.reset()
	for i := range n {
		g := me.rowIDs[i]
		ms := o.mRows[o.mStart[i]:o.mStart[i+1]]
		var err error
		switch b.Op(i) {
		case exec.Insert, exec.UpdateAfter:
			err = o.insertRow(ctx, input, b.Rec, i, g, ms, now, out)
		default:
			err = o.deleteRow(ctx, input, b.Rec, i, g, ms, now, out)
		}
		if err != nil {
			return err
		}
	}
	if err := o.flush(ctx, input, b.Rec, out); err != nil {
		return err
	}
	if o.cfg.Interval != nil {
		o.stampTimes(input, b.Rec)
	}
	if o.disk != nil {
		return o.evictIfFull()
	}
	if o.stateLimit > 0 && o.ttl <= 0 && o.cfg.Interval == nil {
		if n := o.side[0].sideBytes() + o.side[1].sideBytes(); n > o.stateLimit {
			return o.errStateLimit(n)
		}
	}
	if me.rows.Len() > 2*me.live+vector.OutBatchRows {
		return o.compact(input)
	}
	return nil
}

// insertRow stores row i (id g) of the batch from input s, which matches
// the other side's rows ms, and emits what it changes.
func (o *streamJoinOp) insertRow(ctx context.Context, s int, rec arrow.RecordBatch, i int, g uint32, ms []uint32, now int64, out exec.Collector) error {
	me, other := o.side[s], o.side[1-s]
	var m int64
	for _, r := range ms {
		c := other.count[r]
		m += int64(c)
		if o.outer[1-s] && other.matches[r] == 0 && o.cfg.Interval == nil {
			if err := o.add(ctx, s, rec, -1, int32(r), exec.Delete, c, out); err != nil {
				return err
			}
		}
		other.matches[r]++
		if err := o.add(ctx, s, rec, int32(i), int32(r), exec.Insert, c, out); err != nil {
			return err
		}
	}
	if o.outer[s] && len(ms) == 0 && o.cfg.Interval == nil {
		if err := o.add(ctx, s, rec, int32(i), -1, exec.Insert, 1, out); err != nil {
			return err
		}
	}
	if me.count[g] == 0 {
		me.hold(g)
		me.matches[g] = m
	}
	me.count[g]++
	me.touched[g] = now
	return nil
}

// deleteRow removes a copy of row i (id g) from input s's state, when held,
// and emits what it changes.
func (o *streamJoinOp) deleteRow(ctx context.Context, s int, rec arrow.RecordBatch, i int, g uint32, ms []uint32, now int64, out exec.Collector) error {
	me, other := o.side[s], o.side[1-s]
	if me.count[g] == 0 {
		return nil
	}
	for _, r := range ms {
		c := other.count[r]
		if err := o.add(ctx, s, rec, int32(i), int32(r), exec.Delete, c, out); err != nil {
			return err
		}
		if other.matches[r] > 0 {
			other.matches[r]--
			if o.outer[1-s] && other.matches[r] == 0 {
				if err := o.add(ctx, s, rec, -1, int32(r), exec.Insert, c, out); err != nil {
					return err
				}
			}
		}
	}
	if o.outer[s] && len(ms) == 0 {
		if err := o.add(ctx, s, rec, int32(i), -1, exec.Delete, 1, out); err != nil {
			return err
		}
	}
	me.count[g]--
	me.touched[g] = now
	if me.count[g] == 0 {
		me.drop(g)
	}
	return nil
}

// match sets, for every row of the batch from input s, the other side's held
// rows it matches (mStart, mRows): those of its key for which Extra holds.
func (o *streamJoinOp) match(ctx context.Context, s int, rec arrow.RecordBatch) error {
	other := o.side[1-s]
	n := int(rec.NumRows())
	o.mStart = vector.GrowSlice(o.mStart, n+1)
	o.mRows = o.mRows[:0]
	if o.extra == nil {
		for i := range n {
			o.mStart[i] = int32(len(o.mRows))
			if k := o.otherKey[i]; k >= 0 {
				o.mRows = append(o.mRows, other.members[k]...)
			}
		}
		o.mStart[n] = int32(len(o.mRows))
		return nil
	}
	// Candidates by key, then Extra over them a batch at a time.
	var li, ri []int32
	var cand []uint32
	for i := range n {
		if k := o.otherKey[i]; k >= 0 {
			for _, r := range other.members[k] {
				li = append(li, int32(i))
				ri = append(ri, int32(r))
				cand = append(cand, r)
			}
		}
	}
	pass := make([]bool, len(li))
	for lo := 0; lo < len(li); lo += vector.OutBatchRows {
		hi := min(len(li), lo+vector.OutBatchRows)
		pr, err := o.pairRecord(s, rec, li[lo:hi], ri[lo:hi])
		if err != nil {
			return err
		}
		res, err := expr.Eval(o.extra, pr, o.mem)
		pr.Release()
		if err != nil {
			return fmt.Errorf("stream_join: %w", err)
		}
		if cond, ok := res.(*array.Boolean); ok {
			for _, j := range trueRows(cond, nil) {
				pass[lo+int(j)] = true
			}
		} else if res.NullN() != res.Len() {
			res.Release()
			return fmt.Errorf("stream_join: condition is %s, not boolean", res.DataType())
		}
		res.Release()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	j := 0
	for i := range n {
		o.mStart[i] = int32(len(o.mRows))
		for j < len(li) && int(li[j]) == i {
			if pass[j] {
				o.mRows = append(o.mRows, cand[j])
			}
			j++
		}
	}
	o.mStart[n] = int32(len(o.mRows))
	return nil
}

// pairRecord builds the output rows of pairs: rows in of rec, the batch
// from input s, beside the other side's held rows oth (-1: NULLs for either).
func (o *streamJoinOp) pairRecord(s int, rec arrow.RecordBatch, in, oth []int32) (arrow.RecordBatch, error) {
	k := len(in)
	mine, err := vector.GatherColumns(o.mem, nil, rec.Columns(), in)
	if err != nil {
		return nil, fmt.Errorf("stream_join: %w", err)
	}
	theirs, err := o.side[1-s].decode(o.mem, oth)
	if err != nil {
		vector.ReleaseArrays(mine)
		return nil, fmt.Errorf("stream_join: %w", err)
	}
	cols := append(mine, theirs...)
	if s == 1 {
		cols = append(theirs, mine...)
	}
	r, err := vector.MakeRecord(o.out, cols, k)
	if err != nil {
		return nil, fmt.Errorf("stream_join: %w", err)
	}
	return r, nil
}

// decode builds the columns of held rows ids (-1: a row of NULLs).
func (sd *streamJoinSide) decode(mem memory.Allocator, ids []int32) ([]arrow.Array, error) {
	var held []uint32
	idx := make([]int32, len(ids))
	for j, g := range ids {
		if g < 0 {
			idx[j] = -1
			continue
		}
		idx[j] = int32(len(held))
		held = append(held, uint32(g))
	}
	if len(held) == 0 {
		cols := make([]arrow.Array, len(sd.types))
		for c, dt := range sd.types {
			cols[c] = array.MakeArrayOfNull(mem, dt, len(ids))
		}
		return cols, nil
	}
	cols, err := sd.rows.DecodeKeys(mem, sd.types, state.GroupIDs(held))
	if err != nil {
		return nil, err
	}
	if len(held) == len(ids) {
		return cols, nil
	}
	defer vector.ReleaseArrays(cols)
	return vector.GatherColumns(mem, nil, cols, idx)
}

// joinItems are output rows waiting to be built: rows in of the batch
// beside the other side's rows oth.
type joinItems struct {
	in, oth []int32
	ops     []exec.ChangeKind
}

func (j *joinItems) reset() { j.in, j.oth, j.ops = j.in[:0], j.oth[:0], j.ops[:0] }

// add queues copies of an output row, sending full batches.
func (o *streamJoinOp) add(ctx context.Context, s int, rec arrow.RecordBatch, in, th int32, op exec.ChangeKind, copies int32, out exec.Collector) error {
	for range copies {
		o.buf.in = append(o.buf.in, in)
		o.buf.oth = append(o.buf.oth, th)
		o.buf.ops = append(o.buf.ops, op)
		if len(o.buf.in) >= vector.OutBatchRows {
			if err := o.flush(ctx, s, rec, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends the queued output rows.
func (o *streamJoinOp) flush(ctx context.Context, s int, rec arrow.RecordBatch, out exec.Collector) error {
	if len(o.buf.in) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	r, err := o.pairRecord(s, rec, o.buf.in, o.buf.oth)
	if err != nil {
		return err
	}
	ops := append([]exec.ChangeKind(nil), o.buf.ops...)
	o.buf.reset()
	err = out.Collect(ctx, exec.Batch{Rec: r, Ops: ops})
	r.Release()
	return err
}

func (o *streamJoinOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("stream_join: no input %d", input)
	}
	switch s.Kind {
	case exec.EndOfStream:
		first, ended := o.in.end(input)
		if !first {
			return nil
		}
		if o.cfg.Interval != nil {
			if err := o.intervalExpire(ctx, out); err != nil {
				return err
			}
		}
		if ended {
			return out.CollectSignal(ctx, s)
		}
		return o.in.forward(ctx, out)
	case exec.Watermark:
		if o.cfg.Interval != nil {
			// The rows it frees go out before the watermark that frees them.
			o.in.record(input, s.Watermark)
			if err := o.intervalExpire(ctx, out); err != nil {
				return err
			}
		}
		return o.in.watermark(ctx, input, s.Watermark, out)
	case exec.Idle:
		return o.in.idleInput(ctx, input, out)
	}
	return out.CollectSignal(ctx, s)
}

// Tick drops, with a TTL, the rows not written for that long, looking at most
// every tenth of the TTL.
func (o *streamJoinOp) Tick(ctx context.Context, now time.Time, out exec.Collector) error {
	if o.ttl <= 0 || now.Sub(o.swept) < o.ttl/10 {
		return nil
	}
	o.swept = now
	cut := now.Add(-o.ttl).UnixMilli()
	if o.disk != nil {
		return o.ttlExpire(cut)
	}
	o.expire(cut)
	return nil
}

// expire drops the rows (on the disk backend, those cached) last written
// before cut.
func (o *streamJoinOp) expire(cut int64) {
	for s, sd := range o.side {
		for g := range sd.count {
			if sd.count[g] > 0 && sd.touched[g] < cut {
				if o.disk != nil {
					o.disk.change(s, sd.rowKey[g])
				}
				sd.drop(uint32(g))
			}
		}
	}
}

func (o *streamJoinOp) Close(ctx context.Context) error {
	o.closeDisk()
	for _, sd := range o.side {
		if sd != nil {
			sd.release()
		}
	}
	return nil
}
