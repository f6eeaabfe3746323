package operators

// Checkpoint state of hash_join (Checkpointed, checkpoint.go), in the state
// envelope of hashagg_state.go.
//
// The build side has to be in the join's own state: on restore, a bounded right
// source that had finished before the checkpoint is restored as finished and
// emits nothing again. A snapshot has three sections:
//
//	header   JSON: what the join is (kind, keys), which inputs had ended, the
//	         watermark fields, and the row count of each of the two below
//	right    the right side's rows (all inserts) as an Arrow IPC stream:
//	         o.right's batches before the build, o.build after it
//	pending  the left batches waiting for the build side, as an Arrow IPC
//	         stream of the left columns plus an int8 column of change kinds
//
// A side without rows is an empty section rather than a stream: a stream needs
// a schema, and an operator that has seen no batch of a side need not know it
// (JoinConfig.Left and Right are optional). Whether the table is built is not
// stored: buildTable runs exactly when the right side ends, so it is ended[1].
// The table itself is not stored either; restore rebuilds it from the rows.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var _ exec.Checkpointed = (*hashJoinOp)(nil)

const (
	hashJoinStateMagic = "HJON"
	// hashJoinStateVersion is the layout of hash_join's state; a change to the
	// header or to the sections' columns needs a new one.
	hashJoinStateVersion = 1
)

// hashJoinStateHeader is the JSON header of a hash_join state blob.
type hashJoinStateHeader struct {
	// What the operator is, checked against the restoring one's config.
	Kind      string `json:"kind"`
	LeftKeys  []int  `json:"left_keys"`
	RightKeys []int  `json:"right_keys"`

	// The operator's fields of the same names.
	Ended  [2]bool  `json:"ended"`
	WM     [2]int64 `json:"wm"`
	WMSeen [2]bool  `json:"wm_seen"`
	WMOut  int64    `json:"wm_out"`
	WMSent bool     `json:"wm_sent"`

	// RightRows and PendingRows are the rows of the right and pending
	// sections, so that sections swapped or lost are an error.
	RightRows   int `json:"right_rows"`
	PendingRows int `json:"pending_rows"`
}

// SnapshotState returns the right side's rows, the left batches waiting for
// them, which inputs have ended and the watermark state (see the top of this
// file). The blob shares no memory with the operator.
func (o *hashJoinOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.mem == nil {
		return nil, fmt.Errorf("hash_join: snapshot before Open")
	}
	h := hashJoinStateHeader{Kind: o.cfg.Kind, LeftKeys: o.cfg.LeftKeys, RightKeys: o.cfg.RightKeys,
		Ended: o.in.ended, WM: o.in.wm, WMSeen: o.in.wmSeen, WMOut: o.in.wmOut, WMSent: o.in.wmSent}
	right := o.right
	if o.built {
		right = nil
		if o.build != nil {
			right = []arrow.RecordBatch{o.build}
		}
	}
	rightSec, err := o.writeRight(right)
	if err != nil {
		return nil, fmt.Errorf("hash_join: snapshot of the right side: %w", err)
	}
	for _, r := range right {
		h.RightRows += int(r.NumRows())
	}
	pendingSec, err := o.writePending()
	if err != nil {
		return nil, fmt.Errorf("hash_join: snapshot of the pending left batches: %w", err)
	}
	for _, b := range o.pending {
		h.PendingRows += b.NumRows()
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return state.Encode(hashJoinStateMagic, hashJoinStateVersion, hdr, rightSec, pendingSec), nil
}

// writeRight returns recs as one IPC stream under the first one's schema, or
// nil for no records. The IPC writer takes records of one schema, field names
// included; batches of one input have the same column types but need not have
// the same names, so the others are relabelled.
func (o *hashJoinOp) writeRight(recs []arrow.RecordBatch) ([]byte, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	schema := recs[0].Schema()
	same := make([]arrow.RecordBatch, 0, len(recs))
	defer func() {
		for _, r := range same {
			r.Release()
		}
	}()
	for _, r := range recs {
		rel, err := withSchema(schema, r)
		if err != nil {
			return nil, err
		}
		same = append(same, rel)
	}
	return state.WriteIPC(o.mem, schema, same...)
}

// withSchema returns rec under schema, which must have rec's column types; the
// caller releases the result.
func withSchema(schema *arrow.Schema, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if rec.Schema().Equal(schema) {
		rec.Retain()
		return rec, nil
	}
	cols := slices.Clone(rec.Columns())
	for _, c := range cols {
		c.Retain()
	}
	return vector.MakeRecord(schema, cols, int(rec.NumRows()))
}

// writePending returns the pending left batches, each with its change kinds as
// a last int8 column, or nil when there are none.
func (o *hashJoinOp) writePending() ([]byte, error) {
	if len(o.pending) == 0 {
		return nil, nil
	}
	left := o.pending[0].Rec.Schema()
	schema := arrow.NewSchema(append(left.Fields(), arrow.Field{Name: "change_kind", Type: arrow.PrimitiveTypes.Int8}), nil)
	recs := make([]arrow.RecordBatch, 0, len(o.pending))
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	ob := array.NewInt8Builder(o.mem)
	defer ob.Release()
	for _, b := range o.pending {
		n := b.NumRows()
		ob.Reserve(n)
		for i := range n {
			ob.UnsafeAppend(int8(b.Op(i)))
		}
		cols := slices.Clone(b.Rec.Columns())
		for _, c := range cols {
			c.Retain()
		}
		rec, err := vector.MakeRecord(schema, append(cols, ob.NewArray()), n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return state.WriteIPC(o.mem, schema, recs...)
}

// RestoreState makes a freshly opened operator the one SnapshotState saw; when
// the right side had ended it builds the table, so left batches probe at once.
// On an error the operator is left as fresh as it was.
func (o *hashJoinOp) RestoreState(ctx context.Context, data []byte) (err error) {
	if o.mem == nil {
		return fmt.Errorf("hash_join: RestoreState before Open")
	}
	if o.built || o.in != (twoInputs{}) || len(o.right) > 0 || len(o.pending) > 0 {
		return fmt.Errorf("hash_join: RestoreState after input")
	}
	// What was read but not yet handed to the operator; on an error (or a
	// panic, which state.Recover turns into one) these and whatever the
	// operator was given are released.
	var (
		right   []arrow.RecordBatch
		pending []exec.Batch
	)
	defer func() {
		if err == nil {
			return
		}
		for _, r := range right {
			r.Release()
		}
		for _, b := range pending {
			b.Rec.Release()
		}
		o.resetState()
	}()
	defer state.Recover("hash_join", &err)
	sections, err := state.Decode("hash_join", hashJoinStateMagic, hashJoinStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 3 {
		return fmt.Errorf("hash_join: %w: %d sections, want 3", state.ErrBadState, len(sections))
	}
	var h hashJoinStateHeader
	if err := json.Unmarshal(sections[0], &h); err != nil {
		return fmt.Errorf("hash_join: %w: header: %v", state.ErrBadState, err)
	}
	if h.Kind != o.cfg.Kind || !slices.Equal(h.LeftKeys, o.cfg.LeftKeys) || !slices.Equal(h.RightKeys, o.cfg.RightKeys) {
		return fmt.Errorf("hash_join: %w: state of a %s join on left keys %v and right keys %v, this one is %s on %v and %v",
			state.ErrBadState, h.Kind, h.LeftKeys, h.RightKeys, o.cfg.Kind, o.cfg.LeftKeys, o.cfg.RightKeys)
	}
	if h.Ended[1] && h.PendingRows > 0 {
		return fmt.Errorf("hash_join: %w: %d left rows waiting for a right side that had ended", state.ErrBadState, h.PendingRows)
	}
	nr, err := o.readRight(sections[1], h.RightRows, &right)
	if err != nil {
		return fmt.Errorf("hash_join: restore: %w", err)
	}
	if err := o.readPending(sections[2], h.PendingRows, nr, &pending); err != nil {
		return fmt.Errorf("hash_join: restore: %w", err)
	}

	o.right, o.pending = right, pending
	right, pending = nil, nil
	o.in = twoInputs{ended: h.Ended, wm: h.WM, wmSeen: h.WMSeen, wmOut: h.WMOut, wmSent: h.WMSent}
	if h.Ended[1] {
		if err := o.buildTable(); err != nil {
			return fmt.Errorf("hash_join: restore: %w", err)
		}
	}
	return nil
}

// readRight reads the right section into *dst, and returns its number of
// columns, -1 for an empty section. It puts the records in *dst as soon as it
// has them, so that the caller releases them whatever happens next, a panic
// included.
func (o *hashJoinOp) readRight(sec []byte, rows int, dst *[]arrow.RecordBatch) (int, error) {
	if len(sec) == 0 {
		if rows != 0 {
			return -1, fmt.Errorf("%w: no right rows, the header says %d", state.ErrBadState, rows)
		}
		return -1, nil
	}
	schema, recs, err := state.ReadIPC(o.mem, sec)
	if err != nil {
		return -1, fmt.Errorf("%w: right side: %v", state.ErrBadState, err)
	}
	*dst = recs
	nr := schema.NumFields()
	if err := o.checkSide("right", schema.Fields(), o.pairs.NumFields()-nr, o.cfg.Right, o.cfg.RightKeys); err != nil {
		return -1, err
	}
	n := 0
	for _, r := range recs {
		// SnapshotState never writes one: ProcessBatch keeps no empty batch.
		if r.NumRows() == 0 {
			return -1, fmt.Errorf("%w: an empty right batch", state.ErrBadState)
		}
		n += int(r.NumRows())
	}
	if n != rows {
		return -1, fmt.Errorf("%w: %d right rows, the header says %d", state.ErrBadState, n, rows)
	}
	return nr, nil
}

// readPending reads the pending section into *dst, as batches with Ops nil
// when all their rows are inserts, appending each as soon as it has it (see
// readRight). nr is the right side's number of columns, -1 when unknown.
func (o *hashJoinOp) readPending(sec []byte, rows, nr int, dst *[]exec.Batch) error {
	if len(sec) == 0 {
		if rows != 0 {
			return fmt.Errorf("%w: no pending left rows, the header says %d", state.ErrBadState, rows)
		}
		return nil
	}
	schema, recs, err := state.ReadIPC(o.mem, sec)
	if err != nil {
		return fmt.Errorf("%w: pending left batches: %v", state.ErrBadState, err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	nl := schema.NumFields() - 1
	if nl < 0 || schema.Field(nl).Type.ID() != arrow.INT8 {
		return fmt.Errorf("%w: pending left batches of %s, want the left columns and the change kinds", state.ErrBadState, schema)
	}
	if err := o.checkSide("left", schema.Fields()[:nl], 0, o.cfg.Left, o.cfg.LeftKeys); err != nil {
		return err
	}
	if nr >= 0 && nl+nr != o.pairs.NumFields() {
		return fmt.Errorf("%w: %d left and %d right columns for pairs of %d", state.ErrBadState, nl, nr, o.pairs.NumFields())
	}
	left := arrow.NewSchema(schema.Fields()[:nl], nil)
	n := 0
	for _, r := range recs {
		k := int(r.NumRows())
		if k == 0 {
			return fmt.Errorf("%w: an empty pending left batch", state.ErrBadState)
		}
		n += k
		kinds, ok := r.Column(nl).(*array.Int8)
		if !ok || kinds.NullN() != 0 || kinds.Len() != k {
			return fmt.Errorf("%w: pending left batches: bad change kinds", state.ErrBadState)
		}
		var ops []exec.ChangeKind
		for i, v := range kinds.Int8Values() {
			if v < int8(exec.Insert) || v > int8(exec.UpdateAfter) {
				return fmt.Errorf("%w: pending left batches: unknown change kind %d", state.ErrBadState, v)
			}
			if v != int8(exec.Insert) && ops == nil {
				ops = make([]exec.ChangeKind, k)
			}
			if ops != nil {
				ops[i] = exec.ChangeKind(v)
			}
		}
		cols := slices.Clone(r.Columns()[:nl])
		for _, c := range cols {
			c.Retain()
		}
		rec, err := vector.MakeRecord(left, cols, k)
		if err != nil {
			return fmt.Errorf("%w: pending left batches: %v", state.ErrBadState, err)
		}
		*dst = append(*dst, exec.Batch{Rec: rec, Ops: ops})
	}
	if n != rows {
		return fmt.Errorf("%w: %d pending left rows, the header says %d", state.ErrBadState, n, rows)
	}
	return nil
}

// checkSide checks that the columns of one side's state, fields, are where
// a pair has that side's columns (from column off on: a pair is the
// left columns then the right ones), and what the planner said the side is
// when it did (decl), and that the side has the key columns.
func (o *hashJoinOp) checkSide(side string, fields []arrow.Field, off int, decl types.Schema, keys []int) error {
	mismatch := func() error {
		return fmt.Errorf("%w: %s side of %s, but the pairs are %s", state.ErrBadState, side, arrow.NewSchema(fields, nil), o.pairs)
	}
	if off < 0 || off+len(fields) > o.pairs.NumFields() {
		return mismatch()
	}
	for i, f := range fields {
		if !arrow.TypeEqual(f.Type, o.pairs.Field(off+i).Type) {
			return mismatch()
		}
	}
	if len(decl) > 0 {
		want := decl.Arrow()
		if want.NumFields() != len(fields) {
			return fmt.Errorf("%w: %s side of %s, the join's is %s", state.ErrBadState, side, arrow.NewSchema(fields, nil), want)
		}
		for i, f := range fields {
			if !arrow.TypeEqual(f.Type, want.Field(i).Type) {
				return fmt.Errorf("%w: %s side of %s, the join's is %s", state.ErrBadState, side, arrow.NewSchema(fields, nil), want)
			}
		}
	}
	for _, k := range keys {
		if k < 0 || k >= len(fields) {
			return fmt.Errorf("%w: %s key column %d of a %s side of %d columns", state.ErrBadState, side, k, side, len(fields))
		}
	}
	return nil
}

// resetState makes the operator fresh again after a failed RestoreState. Close
// releases what it holds (it is safe to call more than once); the rest is
// plain values.
func (o *hashJoinOp) resetState() {
	_ = o.Close(context.Background())
	o.head, o.next, o.ints, o.built = nil, nil, nil, false
	o.in = twoInputs{}
	o.keys = state.RowKeys{}
}
