package operators

// The checkpoint of an over_window operator.

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	overWindowStateMagic   = "HOVW"
	overWindowStateVersion = 1
)

// The snapshot's last columns: whether the row has sent the functions'
// values beside it, and whether its partition has changes not flushed.
const (
	overWindowSent  = "over_sent"
	overWindowDirty = "over_dirty"
)

// SnapshotState returns every partition's rows in order, each with the
// functions' values it last sent, whether it sent them and whether its
// partition has changes not flushed, then the outputs whose retraction is
// pending, as two Arrow IPC streams. After the flush at a barrier every row
// has sent its values and nothing is pending.
func (o *overWindowOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.rows == nil {
		return nil, fmt.Errorf("over_window: snapshot before Open")
	}
	var entries []overSent
	var flags []overFlags
	for _, p := range o.ps {
		p.entries.Each(func(_ int, e *topnEntry) bool {
			entries = append(entries, overSent{rid: e.rid, vid: max(e.out, 1) - 1})
			flags = append(flags, overFlags{sent: e.out != 0, dirty: p.dirty})
			return true
		})
	}
	a, err := o.snapshotRows(entries, flags)
	if err != nil {
		return nil, err
	}
	b, err := o.snapshotRows(o.gone, nil)
	if err != nil {
		return nil, err
	}
	return state.Encode(overWindowStateMagic, overWindowStateVersion, a, b), nil
}

// snapshotSchema is the output's columns and the sent flag.
func (o *overWindowOp) snapshotSchema() *arrow.Schema {
	return arrow.NewSchema(append(slices.Clone(o.out.Fields()), arrow.Field{Name: overWindowSent, Type: arrow.FixedWidthTypes.Boolean},
		arrow.Field{Name: overWindowDirty, Type: arrow.FixedWidthTypes.Boolean}), nil)
}

// overFlags are a snapshot row's flags.
type overFlags struct{ sent, dirty bool }

// snapshotRows writes outputs ss with their flags (sent and not dirty when
// flags is nil); the values of an output not sent are NULLs.
func (o *overWindowOp) snapshotRows(ss []overSent, flags []overFlags) ([]byte, error) {
	schema := o.snapshotSchema()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for lo := 0; lo < len(ss); lo += vector.OutBatchRows {
		hi := min(len(ss), lo+vector.OutBatchRows)
		var fl []overFlags
		if flags != nil {
			fl = flags[lo:hi]
		}
		rec, err := o.snapshotRecord(schema, ss[lo:hi], fl)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	data, err := state.WriteIPC(o.mem, schema, recs...)
	if err != nil {
		return nil, fmt.Errorf("over_window: snapshot: %w", err)
	}
	return data, nil
}

// snapshotRecord builds rows ss with their flags.
func (o *overWindowOp) snapshotRecord(schema *arrow.Schema, ss []overSent, flags []overFlags) (arrow.RecordBatch, error) {
	rids := make([]uint32, len(ss))
	var vids []uint32
	at := make([]int32, len(ss)) // row i's values: vids[at[i]], or NULLs at -1
	sb, db := array.NewBooleanBuilder(o.mem), array.NewBooleanBuilder(o.mem)
	defer sb.Release()
	defer db.Release()
	for i, s := range ss {
		rids[i], at[i] = s.rid, -1
		if flags == nil || flags[i].sent {
			at[i] = int32(len(vids))
			vids = append(vids, s.vid)
		}
		sb.Append(at[i] >= 0)
		db.Append(flags != nil && flags[i].dirty)
	}
	cols, fns, err := o.decode(rids, vids)
	if err != nil {
		return nil, err
	}
	cols, err = vector.GatherColumns(o.mem, cols, fns, at) // releases cols if it fails
	vector.ReleaseArrays(fns)
	if err != nil {
		return nil, fmt.Errorf("over_window: %w", err)
	}
	rec, err := vector.MakeRecord(schema, append(cols, sb.NewArray(), db.NewArray()), len(ss))
	if err != nil {
		return nil, fmt.Errorf("over_window: %w", err)
	}
	return rec, nil
}

// RestoreState replaces the state with a snapshot's. A partition with
// changes not flushed when the snapshot was taken computes all its rows at
// the next flush.
func (o *overWindowOp) RestoreState(ctx context.Context, data []byte) (err error) {
	defer state.Recover("over_window", &err)
	sections, err := state.Decode("over_window", overWindowStateMagic, overWindowStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 2 {
		return fmt.Errorf("over_window: %w: %d sections, want 2", state.ErrBadState, len(sections))
	}
	o.reset()
	want := o.snapshotSchema()
	for s, sec := range sections {
		schema, recs, err := state.ReadIPC(o.mem, sec)
		if err != nil {
			return fmt.Errorf("over_window: %w: %v", state.ErrBadState, err)
		}
		if !schema.Equal(want) {
			for _, r := range recs {
				r.Release()
			}
			return fmt.Errorf("over_window: %w: state of rows %s, want %s", state.ErrBadState, schema, want)
		}
		for _, rec := range recs {
			if err == nil && rec.NumRows() > 0 {
				err = o.restoreRows(rec, s == 1)
			}
			rec.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// restoreRows appends rec's rows to their partitions, or with gone to the
// pending retractions.
func (o *overWindowOp) restoreRows(rec arrow.RecordBatch, gone bool) error {
	n := int(rec.NumRows())
	nIn := len(o.inTypes)
	if err := o.ids(rec); err != nil {
		return fmt.Errorf("over_window: %w: %v", state.ErrBadState, err)
	}
	if err := o.valIDs(rec.Columns()[nIn:nIn+len(o.fnTypes)], n); err != nil {
		return fmt.Errorf("over_window: %w: %v", state.ErrBadState, err)
	}
	sent := rec.Column(nIn + len(o.fnTypes)).(*array.Boolean)
	dirty := rec.Column(nIn + len(o.fnTypes) + 1).(*array.Boolean)
	for i := range n {
		rid, vid := o.rids[i], o.vids[i]
		holdID(o.rowRefs, &o.rowLive, rid, 1)
		if gone {
			holdID(o.valRefs, &o.valLive, vid, 1)
			o.gone = append(o.gone, overSent{rid: rid, vid: vid})
			continue
		}
		p := o.ps[o.pids[i]]
		o.seq++
		e := topnEntry{key: bytes.Clone(o.skeys.key(i)), rid: rid, seq: o.seq}
		if sent.Value(i) {
			e.out = vid + 1
			holdID(o.valRefs, &o.valLive, vid, 1)
		}
		if (!sent.Value(i) || dirty.Value(i)) && !p.all {
			p.all = true
			p.dirty = true
			o.dirty = append(o.dirty, o.pids[i])
		}
		p.entries.Append(e)
	}
	return nil
}
