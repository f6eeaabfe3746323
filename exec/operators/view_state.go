package operators

// Checkpoint state of a ViewState: its multiset, as an Arrow IPC stream of the
// view's columns plus a trailing bigint count per distinct row, in the state
// envelope of hashagg_state.go.

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	viewStateMagic = "HVEW"
	// viewStateVersion is the layout of a view's state.
	viewStateVersion = 1
)

// SnapshotState returns the view's rows, each distinct row once with the number
// of times the view holds it, for the engine to store with a checkpoint of the
// view's job. It may run concurrently with Send; it sees the rows between two
// batches.
func (v *ViewState) SnapshotState() ([]byte, error) {
	return v.snapshotState(memory.DefaultAllocator)
}

// RestoreState replaces the view's rows with those of a SnapshotState. On an
// error the view is unchanged.
func (v *ViewState) RestoreState(data []byte) error {
	return v.restoreState(memory.DefaultAllocator, data)
}

// stateSchema is the view's schema plus the count column.
func (v *ViewState) stateSchema() *arrow.Schema {
	fields := append(v.schema.Fields(), arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil)
}

func (v *ViewState) snapshotState(mem memory.Allocator) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.snapshotStateLocked(mem)
}

// snapshotStateLocked is snapshotState; a disk-backed view's rows come from
// its DB. Lock should be held.
func (v *ViewState) snapshotStateLocked(mem memory.Allocator) ([]byte, error) {
	schema := v.stateSchema()
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	add := func(t state.Keyed, ids []uint32, counts []int64) error {
		for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
			chunk := ids[lo:min(len(ids), lo+vector.OutBatchRows)]
			cols, err := t.DecodeKeys(mem, v.dts, state.GroupIDs(chunk))
			if err != nil {
				return fmt.Errorf("view: snapshot: %w", err)
			}
			cnt := make([]int64, len(chunk))
			for i, g := range chunk {
				cnt[i] = counts[g]
			}
			cols = append(cols, int64Column(mem, cnt))
			rec, err := vector.MakeRecord(schema, cols, len(chunk))
			if err != nil {
				return fmt.Errorf("view: snapshot: %w", err)
			}
			recs = append(recs, rec)
		}
		return nil
	}
	var err error
	if v.disk != nil {
		err = v.scanDisk(func(t state.Keyed, counts []int64) error {
			return add(t, allIDs(len(counts)), counts)
		})
	} else {
		err = add(v.table, v.liveIDs(), v.counts)
	}
	if err != nil {
		return nil, err
	}
	data, err := state.WriteIPC(mem, schema, recs...)
	if err != nil {
		return nil, fmt.Errorf("view: snapshot: %w", err)
	}
	return state.Encode(viewStateMagic, viewStateVersion, data), nil
}

func (v *ViewState) restoreState(mem memory.Allocator, data []byte) (err error) {
	defer state.Recover("view", &err)
	sections, err := state.Decode("view", viewStateMagic, viewStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) != 1 {
		return fmt.Errorf("view: %w: %d sections, want 1", state.ErrBadState, len(sections))
	}
	schema, recs, err := state.ReadIPC(mem, sections[0])
	if err != nil {
		return fmt.Errorf("view: %w: %v", state.ErrBadState, err)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	nd := len(v.dts)
	if schema.NumFields() != nd+1 || schema.Field(nd).Type.ID() != arrow.INT64 {
		return fmt.Errorf("view: %w: state of rows %s, want %s", state.ErrBadState, schema, v.stateSchema())
	}
	for i, dt := range v.dts {
		if !arrow.TypeEqual(schema.Field(i).Type, dt) {
			return fmt.Errorf("view: %w: state of rows %s, want %s", state.ErrBadState, schema, v.stateSchema())
		}
	}
	for _, rec := range recs {
		cnt, ok := rec.Column(nd).(*array.Int64)
		if !ok || cnt.NullN() != 0 {
			return fmt.Errorf("view: %w: bad count column", state.ErrBadState)
		}
		for _, c := range cnt.Int64Values() {
			if c <= 0 {
				return fmt.Errorf("view: %w: a row held %d times", state.ErrBadState, c)
			}
		}
	}
	if v.disk != nil {
		return v.restoreToDisk(recs)
	}
	table := state.NewKeyTable()
	var (
		keys   state.RowKeys
		gids   []uint32
		counts []int64
		rows   int64
	)
	for _, rec := range recs {
		n := int(rec.NumRows())
		if n == 0 {
			continue
		}
		cnt, ok := rec.Column(nd).(*array.Int64)
		if !ok || cnt.NullN() != 0 || cnt.Len() != n {
			return fmt.Errorf("view: %w: bad count column", state.ErrBadState)
		}
		if err := keys.Encode(rec.Columns()[:nd], nil, n); err != nil {
			return fmt.Errorf("view: %w: %v", state.ErrBadState, err)
		}
		gids = vector.GrowSlice(gids, n)
		table.InsertRows(&keys, gids)
		counts = vector.GrowZero(counts, table.Len())
		for i, c := range cnt.Int64Values() {
			if c <= 0 {
				return fmt.Errorf("view: %w: a row held %d times", state.ErrBadState, c)
			}
			counts[gids[i]] += c
			rows += c
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.table, v.counts, v.rows, v.live = table, counts, rows, table.Len()
	// Both alias or size to what they last held; start afresh.
	v.keys, v.gids = state.RowKeys{}, nil
	return nil
}

// restoreToDisk puts the rows of a whole snapshot (recs, checked: the view's
// columns and a positive count) into a disk-backed view's DB through its
// cache, which it leaves empty.
func (v *ViewState) restoreToDisk(recs []arrow.RecordBatch) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	nd := len(v.dts)
	v.table.Release()
	v.table, v.keys, v.counts, v.live, v.rows = state.NewKeyTable(), state.RowKeys{}, nil, 0, 0
	v.disk.forget()
	for _, rec := range recs {
		n := int(rec.NumRows())
		if n == 0 {
			continue
		}
		if err := v.keys.Encode(rec.Columns()[:nd], nil, n); err != nil {
			return fmt.Errorf("view: %w: %v", state.ErrBadState, err)
		}
		first := v.table.Len()
		v.gids = vector.GrowSlice(v.gids, n)
		v.table.InsertRows(&v.keys, v.gids)
		v.counts = vector.GrowZero(v.counts, v.table.Len())
		if err := v.loadCounts(first, v.gids); err != nil {
			return err
		}
		for i, c := range rec.Column(nd).(*array.Int64).Int64Values() {
			v.counts[v.gids[i]] += c
			v.rows += c
		}
		if err := v.evictIfFull(); err != nil {
			return err
		}
	}
	return v.writeBack()
}
