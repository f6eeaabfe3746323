package operators

// The stream join's state as a checkpoint, and the rebuilding of a side's
// tables from its held rows, which restoring and compacting share.

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	streamJoinStateMagic   = "HSJN"
	streamJoinStateVersion = 1
)

// stateSchema is a side's columns and, per held row, its copies, matches and
// time of last write.
func (sd *streamJoinSide) stateSchema() *arrow.Schema {
	fields := append([]arrow.Field(nil), sd.schema.Fields()...)
	for i := range fields {
		fields[i].Name = fmt.Sprintf("c%d", i)
		fields[i].Nullable = true
	}
	fields = append(fields,
		arrow.Field{Name: "copies", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "matches", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "touched", Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil)
}

// heldRecords returns the held rows, in state records of at most
// vector.OutBatchRows rows.
func (o *streamJoinOp) heldRecords(sd *streamJoinSide) ([]arrow.RecordBatch, error) {
	var ids []uint32
	for g, c := range sd.count {
		if c > 0 {
			ids = append(ids, uint32(g))
		}
	}
	schema := sd.stateSchema()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
		chunk := ids[lo:min(len(ids), lo+vector.OutBatchRows)]
		cols, err := sd.rows.DecodeKeys(o.mem, sd.types, state.GroupIDs(chunk))
		if err != nil {
			releaseRecords(recs)
			return nil, err
		}
		copies := array.NewInt64Builder(o.mem)
		matches := array.NewInt64Builder(o.mem)
		touched := array.NewInt64Builder(o.mem)
		for _, g := range chunk {
			copies.Append(int64(sd.count[g]))
			matches.Append(sd.matches[g])
			touched.Append(sd.touched[g])
		}
		cols = append(cols, copies.NewArray(), matches.NewArray(), touched.NewArray())
		copies.Release()
		matches.Release()
		touched.Release()
		rec, err := vector.MakeRecord(schema, cols, len(chunk))
		if err != nil {
			releaseRecords(recs)
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

func releaseRecords(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// addHeld adds the held rows of a state record to sd, whose tables must not
// hold any of them yet.
func (sd *streamJoinSide) addHeld(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	nc := len(sd.types)
	if err := sd.index(rec.Columns()[:nc], n); err != nil {
		return err
	}
	copies := rec.Column(nc).(*array.Int64)
	matches := rec.Column(nc + 1).(*array.Int64)
	touched := rec.Column(nc + 2).(*array.Int64)
	for i := range n {
		g := sd.rowIDs[i]
		if sd.count[g] != 0 || copies.Value(i) <= 0 {
			return fmt.Errorf("row %d held twice, or with %d copies", i, copies.Value(i))
		}
		sd.hold(g)
		sd.count[g] = int32(copies.Value(i))
		sd.matches[g] = matches.Value(i)
		sd.touched[g] = touched.Value(i)
	}
	return nil
}

// compact rebuilds side s's tables from its held rows.
func (o *streamJoinOp) compact(s int) error {
	sd := o.side[s]
	recs, err := o.heldRecords(sd)
	if err != nil {
		return fmt.Errorf("stream_join: %w", err)
	}
	defer releaseRecords(recs)
	fresh := &streamJoinSide{keyCols: sd.keyCols, types: sd.types, schema: sd.schema}
	fresh.reset()
	for _, rec := range recs {
		if err := fresh.addHeld(rec); err != nil {
			fresh.release()
			return fmt.Errorf("stream_join: %w", err)
		}
	}
	sd.release()
	o.side[s] = fresh
	return nil
}

// SnapshotState returns each side's held rows as an Arrow IPC stream.
func (o *streamJoinOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.side[0].rows == nil {
		return nil, fmt.Errorf("stream_join: snapshot before Open")
	}
	if o.disk != nil {
		p, err := o.snapshotDisk(checkpoint)
		return finishNow(ctx, p, err)
	}
	var sections [][]byte
	for _, sd := range o.side {
		recs, err := o.heldRecords(sd)
		if err != nil {
			return nil, fmt.Errorf("stream_join: snapshot: %w", err)
		}
		data, err := state.WriteIPC(o.mem, sd.stateSchema(), recs...)
		releaseRecords(recs)
		if err != nil {
			return nil, fmt.Errorf("stream_join: snapshot: %w", err)
		}
		sections = append(sections, data)
	}
	return state.Encode(streamJoinStateMagic, streamJoinStateVersion, sections...), nil
}

// RestoreState replaces both sides' state with a snapshot's.
func (o *streamJoinOp) RestoreState(ctx context.Context, data []byte) (err error) {
	defer state.Recover("stream_join", &err)
	if len(data) >= 4 && string(data[:4]) == streamJoinDiskMagic {
		return o.restoreDisk(ctx, data)
	}
	sections, err := state.Decode("stream_join", streamJoinStateMagic, streamJoinStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 2 {
		return fmt.Errorf("stream_join: %w: %d sections, want 2", state.ErrBadState, len(sections))
	}
	for s, sd := range o.side {
		schema, recs, err := state.ReadIPC(o.mem, sections[s])
		if err != nil {
			return fmt.Errorf("stream_join: %w: %v", state.ErrBadState, err)
		}
		want := sd.stateSchema()
		if !schemaTypesEqual(schema, want) {
			releaseRecords(recs)
			return fmt.Errorf("stream_join: %w: state of rows %s, want %s", state.ErrBadState, schema, want)
		}
		sd.reset()
		for _, rec := range recs {
			if err = sd.addHeld(rec); err != nil {
				break
			}
		}
		releaseRecords(recs)
		if err != nil {
			return fmt.Errorf("stream_join: %w: %v", state.ErrBadState, err)
		}
	}
	if o.disk != nil {
		o.disk.cacheAll(o)
	}
	return nil
}

// schemaTypesEqual reports whether two schemas have the same column types.
func schemaTypesEqual(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}
