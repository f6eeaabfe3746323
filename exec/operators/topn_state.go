package operators

// The checkpoint of a topn operator.

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
	topnStateMagic   = "HTOP"
	topnStateVersion = 2
)

// SnapshotState returns every partition's entries, in order, and the rows
// last emitted with their ranks, as two Arrow IPC streams; then First's
// state (snapshotFirst). When no partition has changes to flush (as after
// the flush at a barrier) what each emitted is its top, so the second
// section is empty: restoring takes the tops again, and the state is half
// as big. On the disk backend it is the DB's checkpoint (topn_disk.go).
func (o *topnOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.rows == nil {
		return nil, fmt.Errorf("topn: snapshot before Open")
	}
	if o.disk != nil {
		p, err := o.snapshotDisk(checkpoint)
		return finishNow(ctx, p, err)
	}
	return o.snapshotMemory()
}

// snapshotMemory is SnapshotState of the memory backend.
func (o *topnOp) snapshotMemory() ([]byte, error) {
	var entries, emitted []topnOut
	for _, p := range o.ps {
		p.entries.Each(func(_ int, e *topnEntry) bool {
			entries = append(entries, topnOut{rid: e.rid})
			return true
		})
		emitted = append(emitted, p.emitted...)
	}
	tops := len(o.dirty) == 0
	rankSchema := arrow.NewSchema(append(slices.Clone(o.inSchema.Fields()), arrow.Field{Name: "rank", Type: arrow.PrimitiveTypes.Int64}), nil)
	a, err := o.snapshotRows(entries, false, o.inSchema)
	if err != nil {
		return nil, err
	}
	var b []byte
	if !tops {
		if b, err = o.snapshotRows(emitted, true, rankSchema); err != nil {
			return nil, err
		}
	}
	closed, mark, err := o.snapshotFirst()
	if err != nil {
		return nil, err
	}
	return state.Encode(topnStateMagic, topnStateVersion, a, b, closed, mark), nil
}

func (o *topnOp) snapshotRows(rs []topnOut, rank bool, schema *arrow.Schema) ([]byte, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for lo := 0; lo < len(rs); lo += vector.OutBatchRows {
		rec, err := o.record(rs[lo:min(len(rs), lo+vector.OutBatchRows)], rank, schema)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	data, err := state.WriteIPC(o.mem, schema, recs...)
	if err != nil {
		return nil, fmt.Errorf("topn: snapshot: %w", err)
	}
	return data, nil
}

// RestoreState replaces the state with a snapshot's.
func (o *topnOp) RestoreState(ctx context.Context, data []byte) (err error) {
	defer state.Recover("topn", &err)
	if len(data) >= 4 && string(data[:4]) == topnDiskMagic {
		return o.restoreDisk(ctx, data)
	}
	sections, err := state.Decode("topn", topnStateMagic, topnStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 4 {
		return fmt.Errorf("topn: %w: %d sections, want 4", state.ErrBadState, len(sections))
	}
	o.reset()
	tops := len(sections[1]) == 0
	for s, sec := range sections[:2] {
		if s == 1 && tops {
			break
		}
		schema, recs, err := state.ReadIPC(o.mem, sec)
		if err != nil {
			return fmt.Errorf("topn: %w: %v", state.ErrBadState, err)
		}
		err = o.restoreRows(schema, recs, s == 1)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return err
		}
	}
	if err := o.restoreFirst(sections[2], sections[3]); err != nil {
		return err
	}
	if o.disk != nil {
		o.disk.cacheAll(o)
	}
	switch {
	case o.cfg.Final:
	case tops:
		for _, p := range o.ps {
			p.emitted = o.top(p.emitted[:0], p)
			for _, r := range p.emitted {
				o.ref(r.rid, 1)
			}
		}
	default:
		// Changes not flushed before the snapshot go out at the next flush.
		for pid, p := range o.ps {
			p.dirty = true
			o.dirty = append(o.dirty, uint32(pid))
		}
	}
	return nil
}

// restoreRows appends recs's rows to their partitions' entries, or with
// emitted to their emitted tops (the rank in the last column).
func (o *topnOp) restoreRows(schema *arrow.Schema, recs []arrow.RecordBatch, emitted bool) error {
	want := len(o.inTypes)
	if emitted {
		want++
	}
	if schema.NumFields() != want {
		return fmt.Errorf("topn: %w: state of rows %s, want %s", state.ErrBadState, schema, o.inSchema)
	}
	for i, dt := range o.inTypes {
		if !arrow.TypeEqual(schema.Field(i).Type, dt) {
			return fmt.Errorf("topn: %w: state of rows %s, want %s", state.ErrBadState, schema, o.inSchema)
		}
	}
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		if err := o.ids(rec); err != nil {
			return fmt.Errorf("topn: %w: %v", state.ErrBadState, err)
		}
		var ranks []int64
		if emitted {
			r, ok := rec.Column(want - 1).(*array.Int64)
			if !ok {
				return fmt.Errorf("topn: %w: the ranks are %s", state.ErrBadState, rec.Column(want-1).DataType())
			}
			ranks = r.Int64Values()
		}
		for i := range int(rec.NumRows()) {
			p := o.ps[o.pids[i]]
			if emitted {
				p.emitted = append(p.emitted, topnOut{rid: o.rids[i], rank: ranks[i]})
			} else {
				o.touched(o.pids[i])
				o.seq++
				p.entries.Append(topnEntry{key: bytes.Clone(o.skeys.key(i)), rid: o.rids[i], seq: o.seq})
			}
			o.ref(o.rids[i], 1)
		}
	}
	return nil
}
