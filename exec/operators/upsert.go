package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// upsertOp is kind "upsert" (UpsertConfig), Flink's ChangelogNormalize: it
// turns a stream of upserts and deletes by key (an upsert Kafka topic read
// back) into a changelog the other operators can fold. Its input rows are
// upserts (Insert, UpdateAfter), whole rows, and deletes (Delete), of which
// only the key columns count; UpdateBefore rows are ignored. It keeps the
// current row of each key and emits, per batch, the retractions of the rows
// replaced or deleted (UpdateBefore, Delete), then the new rows (UpdateAfter
// for a key it held, else Insert). An upsert that repeats the current row
// exactly emits nothing; a delete of a key not held emits nothing; within one
// batch only the last change of a key counts. Rows with a NULL key are dropped.
//
// State: pk maps each key to an id; rows maps each distinct whole row it has
// held to an id, cur[key id] being the id of the key's current row (-1 for
// none). A row's columns come back from rows (DecodeKeys) a batch at a time;
// rows of replaced versions stay in rows until there are more of them than
// current ones, when rows is rebuilt from the current ones. Its checkpoint is
// the current rows, as an Arrow IPC stream.
type upsertOp struct {
	cfg    UpsertConfig
	mem    memory.Allocator
	schema *arrow.Schema
	types  []arrow.DataType

	pk   *state.KeyTable
	rows *state.KeyTable
	cur  []int32 // by key id: the current row's id in rows, -1 for none
	live int     // keys with a current row

	keys, full state.RowKeys
	pkIDs      []uint32
	rowIDs     []uint32
	stamp      []uint32 // by key id: the batch that last chose a row of it
	batchNo    uint32
}

var _ exec.Operator = (*upsertOp)(nil)

func newUpsertOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg UpsertConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("upsert: bad config: %w", err)
	}
	if len(cfg.Key) == 0 {
		return nil, fmt.Errorf("upsert: no key columns")
	}
	o := &upsertOp{cfg: cfg, schema: spec.Out.Arrow()}
	for _, k := range cfg.Key {
		if k < 0 || k >= o.schema.NumFields() {
			return nil, fmt.Errorf("upsert: key column %d out of range (%d columns)", k, o.schema.NumFields())
		}
	}
	for _, f := range o.schema.Fields() {
		o.types = append(o.types, f.Type)
	}
	return o, nil
}

func (o *upsertOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.pk, o.rows = state.NewKeyTable(), state.NewKeyTable()
	return nil
}

func (o *upsertOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *upsertOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if int(b.Rec.NumCols()) != len(o.types) {
		return fmt.Errorf("upsert: a batch of %d columns, want %d", b.Rec.NumCols(), len(o.types))
	}
	keyCols := make([]arrow.Array, len(o.cfg.Key))
	for i, k := range o.cfg.Key {
		keyCols[i] = b.Rec.Column(k)
	}
	if err := o.keys.Encode(keyCols, nil, n); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	o.pkIDs = vector.GrowSlice(o.pkIDs, n)
	o.pk.InsertRows(&o.keys, o.pkIDs)
	for len(o.cur) < o.pk.Len() {
		o.cur = append(o.cur, -1)
		o.stamp = append(o.stamp, 0)
	}
	// The last change of each key in the batch, in the batch's order.
	o.batchNo++
	var chosen []int32
	for i := n - 1; i >= 0; i-- {
		g := o.pkIDs[i]
		if o.keys.Null(i) || b.Op(i) == exec.UpdateBefore || o.stamp[g] == o.batchNo {
			continue
		}
		o.stamp[g] = o.batchNo
		chosen = append(chosen, int32(i))
	}
	for l, r := 0, len(chosen)-1; l < r; l, r = l+1, r-1 {
		chosen[l], chosen[r] = chosen[r], chosen[l]
	}
	var ups []int32 // the chosen upserts
	for _, i := range chosen {
		if b.Op(int(i)) != exec.Delete {
			ups = append(ups, i)
		}
	}
	// The upserts' whole rows get their ids in rows.
	var upRec arrow.RecordBatch
	if len(ups) > 0 {
		var err error
		if len(ups) == n {
			upRec = b.Rec
			upRec.Retain()
		} else if upRec, err = vector.GatherRecord(o.mem, b.Rec, ups); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		defer upRec.Release()
		if err := o.full.Encode(upRec.Columns(), nil, len(ups)); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		o.rowIDs = vector.GrowSlice(o.rowIDs, len(ups))
		o.rows.InsertRows(&o.full, o.rowIDs)
	}
	var oldIDs []uint32          // rows to retract
	var oldOps []exec.ChangeKind // their change kinds
	var newSel []int32           // positions in upRec of the rows to emit
	var newOps []exec.ChangeKind
	u := 0
	for _, i := range chosen {
		g := o.pkIDs[i]
		old := o.cur[g]
		if b.Op(int(i)) == exec.Delete {
			if old >= 0 {
				oldIDs, oldOps = append(oldIDs, uint32(old)), append(oldOps, exec.Delete)
				o.cur[g] = -1
				o.live--
			}
			continue
		}
		id := int32(o.rowIDs[u])
		switch {
		case old == id: // the same row again
		case old >= 0:
			oldIDs, oldOps = append(oldIDs, uint32(old)), append(oldOps, exec.UpdateBefore)
			newSel, newOps = append(newSel, int32(u)), append(newOps, exec.UpdateAfter)
		default:
			newSel, newOps = append(newSel, int32(u)), append(newOps, exec.Insert)
			o.live++
		}
		o.cur[g] = id
		u++
	}
	if len(oldIDs) > 0 {
		cols, err := o.rows.DecodeKeys(o.mem, o.types, state.GroupIDs(oldIDs))
		if err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		rec, err := vector.MakeRecord(o.schema, cols, len(oldIDs))
		if err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		err = out.Collect(ctx, exec.Batch{Rec: rec, Ops: oldOps})
		rec.Release()
		if err != nil {
			return err
		}
	}
	if len(newSel) > 0 {
		rec := upRec
		if len(newSel) < len(ups) {
			var err error
			if rec, err = vector.GatherRecord(o.mem, upRec, newSel); err != nil {
				return fmt.Errorf("upsert: %w", err)
			}
			defer rec.Release()
		}
		if !o.schema.Equal(rec.Schema()) {
			rec = array.NewRecordBatch(o.schema, rec.Columns(), rec.NumRows())
			defer rec.Release()
		}
		if err := out.Collect(ctx, exec.Batch{Rec: rec, Ops: newOps}); err != nil {
			return err
		}
	}
	if o.rows.Len() > 2*o.live+vector.OutBatchRows {
		o.compact()
	}
	return nil
}

// liveRows returns the ids in rows of the current rows, in key order.
func (o *upsertOp) liveRows() []uint32 {
	ids := make([]uint32, 0, o.live)
	for _, r := range o.cur {
		if r >= 0 {
			ids = append(ids, uint32(r))
		}
	}
	return ids
}

// compact rebuilds rows from the current rows only. Each key's row holds
// the key, so the current rows are distinct.
func (o *upsertOp) compact() {
	rows := o.rows.Compacted(o.liveRows()) // current row j gets id j
	j := int32(0)
	for g, r := range o.cur {
		if r >= 0 {
			o.cur[g] = j
			j++
		}
	}
	o.rows.Release()
	o.rows = rows
}

const (
	upsertStateMagic   = "HUPS"
	upsertStateVersion = 1
)

// SnapshotState returns the current rows as an Arrow IPC stream.
func (o *upsertOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.rows == nil {
		return nil, fmt.Errorf("upsert: snapshot before Open")
	}
	ids := o.liveRows()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
		chunk := ids[lo:min(len(ids), lo+vector.OutBatchRows)]
		cols, err := o.rows.DecodeKeys(o.mem, o.types, state.GroupIDs(chunk))
		if err != nil {
			return nil, fmt.Errorf("upsert: snapshot: %w", err)
		}
		rec, err := vector.MakeRecord(o.schema, cols, len(chunk))
		if err != nil {
			return nil, fmt.Errorf("upsert: snapshot: %w", err)
		}
		recs = append(recs, rec)
	}
	data, err := state.WriteIPC(o.mem, o.schema, recs...)
	if err != nil {
		return nil, fmt.Errorf("upsert: snapshot: %w", err)
	}
	return state.Encode(upsertStateMagic, upsertStateVersion, data), nil
}

// RestoreState replaces the state with a snapshot's rows.
func (o *upsertOp) RestoreState(ctx context.Context, data []byte) (err error) {
	defer state.Recover("upsert", &err)
	sections, err := state.Decode("upsert", upsertStateMagic, upsertStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 1 {
		return fmt.Errorf("upsert: %w: %d sections, want 1", state.ErrBadState, len(sections))
	}
	schema, recs, err := state.ReadIPC(o.mem, sections[0])
	if err != nil {
		return fmt.Errorf("upsert: %w: %v", state.ErrBadState, err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if schema.NumFields() != len(o.types) {
		return fmt.Errorf("upsert: %w: state of rows %s, want %s", state.ErrBadState, schema, o.schema)
	}
	for i, dt := range o.types {
		if !arrow.TypeEqual(schema.Field(i).Type, dt) {
			return fmt.Errorf("upsert: %w: state of rows %s, want %s", state.ErrBadState, schema, o.schema)
		}
	}
	o.pk.Release()
	o.rows.Release()
	o.pk, o.rows = state.NewKeyTable(), state.NewKeyTable()
	o.cur, o.stamp, o.live = nil, nil, 0
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		if err := o.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, discard{}); err != nil {
			return fmt.Errorf("upsert: %w: %v", state.ErrBadState, err)
		}
	}
	return nil
}

// discard is a Collector that drops what it is given.
type discard struct{}

func (discard) Collect(context.Context, exec.Batch) error        { return nil }
func (discard) CollectSignal(context.Context, exec.Signal) error { return nil }

func (o *upsertOp) Close(ctx context.Context) error {
	if o.pk != nil {
		o.pk.Release()
		o.rows.Release()
		o.pk, o.rows = nil, nil
	}
	return nil
}

var _ exec.Checkpointed = (*upsertOp)(nil)
