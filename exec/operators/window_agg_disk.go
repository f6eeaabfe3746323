package operators

// window_agg on the disk state backend (exec/state/disk; SET state_backend =
// 'disk'): a complete or final window aggregation keeps its windows' groups
// in one pebble DB, keyed (window end, group key), both order-preserving, so
// that a window's groups are one range of keys and the windows a watermark
// closes are the range from the first key up to it. (A partial phase stays in
// memory: it is already bounded, sending what it holds on when it outgrows
// its budget.)
//
// Each open window keeps its bounded hash_agg, whose KeyTable and columns
// are the window's part of a cache in front of the DB (hashagg_disk.go's,
// with the window's end as its keys' prefix): batches fold into it with the
// memory backend's loops, and only the groups a batch brings that are not
// cached are looked up, in one call for the batch, and only in a window that
// has written groups to the DB before. When the windows' caches together
// outgrow the bound (a quarter of the slot's --state-memory), each writes
// its changed groups back and empties. No per-row pebble call.
//
// A window that closes without ever having left its cache emits its rows as
// on the memory backend, touching no disk. One that did writes its changed
// groups back and emits its groups from a scan of its range, a chunk at a
// time (decoded into its emptied cache, so that a window larger than memory
// goes out in bounded pieces); once the watermark's windows are out, their
// keys are deleted, one range deletion from the first key up to the last
// window closed.
//
// Its checkpoint ("WAGD") is the watermark, the open windows' ends, the key
// and aggregate input types and the DB's checkpoint manifest: only the files
// new since the last checkpoint are uploaded (disk.DB.Checkpoint), off the
// task's goroutine (exec.AsyncCheckpointed).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	windowAggDiskMagic   = "WAGD"
	windowAggDiskVersion = 1
	// windowEmitChunk is the groups a window closed from the DB decodes and
	// emits at a time.
	windowEmitChunk = 8192
)

var (
	_ exec.AsyncCheckpointed = (*windowAggOp)(nil)
)

// windowDisk is a window_agg's disk state: the DB its windows share.
type windowDisk struct {
	db    *disk.DB
	opts  disk.Options
	files exec.StateFiles
	limit int64
	// probe is an unopened hash_agg of the operator's config, for the
	// checkpoint header.
	probe *hashAggOp
	// evictions counts the times the windows' caches were emptied, closes
	// the windows closed from the DB and cached those closed from the cache
	// alone.
	evictions, closes, cached int
	// keyTypes and aggTypes (by aggregate, nil where unknown) are the types
	// restored from a checkpoint, given to windows that come back from it
	// before any batch.
	keyTypes []arrow.DataType
	aggTypes []arrow.DataType
	// deleteTo is the end of the last window closed from the DB whose keys
	// are not yet deleted; deletes says there is one.
	deleteTo int64
	deletes  bool
	// Scratch for emitting a window from a scan.
	keyData []byte
	keyOffs []int32
	valData []byte
	valOffs []int
	loads   [][]byte
	gids    []uint32
}

// stateBackend returns the backend the operator's state is on: disk only for
// a complete or final phase.
func (o *windowAggOp) stateBackend(tc *exec.TaskContext) string {
	b := o.cfg.Agg.StateBackend
	if b == "" {
		b = tc.StateBackend
	}
	if b != StateDisk || o.cfg.Agg.Phase == AggPartial {
		return StateMemory
	}
	return StateDisk
}

// openDisk opens the operator's disk state.
func (o *windowAggOp) openDisk(tc *exec.TaskContext) error {
	probe, err := newHashAgg(o.cfg.Agg, o.spec)
	if err != nil {
		return err
	}
	opts := disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	db, err := disk.Open(opts)
	if err != nil {
		return fmt.Errorf("window_agg: %w", err)
	}
	o.disk = &windowDisk{db: db, opts: opts, files: tc.StateFiles, limit: opts.CacheBytes(), probe: probe}
	return nil
}

// windowKeyPrefix appends the prefix of the keys of the window ending at end:
// the end, order-preserving (disk.AppendOrdered's encoding of a timestamp
// without its flag).
func windowKeyPrefix(dst []byte, end int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(end)^1<<63)
}

// windowKeyBound is the bound past the keys of the windows ending at end or
// before (nil: none).
func windowKeyBound(end int64) []byte {
	if end == math.MaxInt64 {
		return nil
	}
	return windowKeyPrefix(nil, end+1)
}

// attach puts the window ending at end's aggregation w, just opened, on the
// DB.
func (d *windowDisk) attach(w *hashAggOp, end int64) error {
	w.budget = 0 // the operator bounds its windows' caches together
	w.disk = &aggDisk{db: d.db, opts: d.opts, files: d.files, limit: math.MaxInt64,
		prefix: windowKeyPrefix(nil, end), shared: true}
	if w.keyTypes == nil && d.keyTypes != nil {
		w.keyTypes = d.keyTypes
	}
	for i, dt := range d.aggTypes {
		if dt != nil {
			if err := w.slots()[i].setInputType(dt); err != nil {
				return fmt.Errorf("window_agg: %w: %v", state.ErrBadState, err)
			}
		}
	}
	return nil
}

// evictIfFull, once the windows' caches together outgrew their bound, writes
// every window's changed groups back and empties its cache.
func (o *windowAggOp) evictIfFull(ctx context.Context, out exec.Collector) error {
	var n int64
	for _, w := range o.wins {
		n += w.cacheBytes()
	}
	if n <= o.disk.limit {
		return nil
	}
	for _, w := range o.wins {
		if err := evictWindow(w); err != nil {
			return err
		}
	}
	o.disk.evictions++
	return nil
}

// evictWindow writes window aggregation w's changed groups back and empties
// its cache, dropping its columns whole: emptied in place they would keep
// their capacity, and the windows open together would go on holding the
// bound's worth.
func evictWindow(w *hashAggOp) error {
	if err := w.writeBack(); err != nil {
		return err
	}
	slots := w.slots()
	types := make([]arrow.DataType, len(slots))
	for i, s := range slots {
		types[i] = s.inputType()
	}
	w.table.Release()
	w.table = state.NewKeyTable()
	if _, err := w.buildAggs(); err != nil {
		return err
	}
	for i, s := range w.slots() {
		if types[i] != nil {
			if err := s.setInputType(types[i]); err != nil {
				return err
			}
		}
	}
	w.emitted, w.isDirty = nil, nil
	w.disk.changeSet = changeSet{} // written back above; dropped whole, as the columns
	return nil
}

// signalDisk is signal with the windows closed from the DB where they wrote
// to it, whose keys are then deleted.
func (o *windowAggOp) signalDisk(ctx context.Context, s exec.Signal, out exec.Collector) error {
	err := o.signalWith(ctx, s, out, func(w *hashAggOp, rows exec.Collector) error {
		return o.closeWindow(ctx, w, rows)
	})
	if err != nil {
		return err
	}
	return o.disk.deleteClosed()
}

// closeWindow emits the rows of window aggregation w, which closed.
func (o *windowAggOp) closeWindow(ctx context.Context, w *hashAggOp, rows exec.Collector) error {
	wd := w.disk
	if !wd.written {
		// The window never left its cache: it ends as on the memory backend.
		o.disk.cached++
		return w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rows)
	}
	if err := w.writeBack(); err != nil {
		return err
	}
	w.clearCache()
	end := int64(binary.BigEndian.Uint64(wd.prefix) ^ 1<<63)
	d := o.disk
	d.closes++
	if !d.deletes || end > d.deleteTo {
		d.deleteTo, d.deletes = end, true
	}
	return d.emitRange(ctx, w, wd.prefix, windowKeyBound(end), rows)
}

// emitRange emits the groups of window aggregation w, its cache empty, that
// are in the DB's range [lo, hi), a chunk at a time.
func (d *windowDisk) emitRange(ctx context.Context, w *hashAggOp, lo, hi []byte, rows exec.Collector) error {
	if len(w.keyTypes) == 1 && w.keyTypes[0].ID() == arrow.STRING {
		// Its key always has the window's end, a timestamp: never one text
		// column, which the table keeps raw with NULL beside it.
		return fmt.Errorf("window_agg: a window's key of one text column")
	}
	reset := func() {
		d.keyData, d.keyOffs = d.keyData[:0], append(d.keyOffs[:0], 0)
		d.valData, d.valOffs = d.valData[:0], append(d.valOffs[:0], 0)
	}
	reset()
	flush := func() error {
		n := len(d.keyOffs) - 1
		if n == 0 {
			return nil
		}
		var keys state.RowKeys
		keys.SetEncoded(w.keyTypes, d.keyData, d.keyOffs, nil)
		d.gids = vector.GrowSlice(d.gids, n)
		w.table.InsertRows(&keys, d.gids[:n])
		d.loads = d.loads[:0]
		for i := range n {
			d.loads = append(d.loads, d.valData[d.valOffs[i]:d.valOffs[i+1]])
		}
		for _, s := range w.slots() {
			if err := s.decodeSlots(d.gids[:n], d.loads, n); err != nil {
				return err
			}
		}
		for _, v := range d.loads {
			if len(v) != 0 {
				return fmt.Errorf("window_agg: disk state value has %d stray bytes", len(v))
			}
		}
		err := w.emit(ctx, rows)
		w.clearCache()
		reset()
		return err
	}
	err := d.db.Scan(lo, hi, func(_, v []byte) error {
		if len(v) == 0 {
			return fmt.Errorf("window_agg: empty disk state value")
		}
		key, rest, err := cutValueKey(v[1:])
		if err != nil {
			return fmt.Errorf("window_agg: %w", err)
		}
		d.keyData = append(d.keyData, key...)
		d.keyOffs = append(d.keyOffs, int32(len(d.keyData)))
		d.valData = append(d.valData, rest...)
		d.valOffs = append(d.valOffs, len(d.valData))
		if len(d.keyOffs)-1 == windowEmitChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// deleteClosed deletes the keys of the windows closed from the DB: every key
// up to the last one's.
func (d *windowDisk) deleteClosed() error {
	if !d.deletes {
		return nil
	}
	d.deletes = false
	b := d.db.NewBatch()
	err := b.DeleteRange(nil, windowKeyBound(d.deleteTo))
	if err = errors.Join(err, b.Commit()); err != nil {
		return fmt.Errorf("window_agg: disk state: %w", err)
	}
	return nil
}

// windowAggDiskHeader is the JSON header of a WAGD blob.
type windowAggDiskHeader struct {
	hashAggStateHeader
	Mark    int64   `json:"mark"`
	Windows []int64 `json:"windows"`
	// Types has a field "key<i>" of each key column's type and "agg<i>" of
	// aggregate i's input type, where known.
	Types []byte `json:"types"`
}

// SnapshotStateAsync writes the windows' changed groups back and takes a
// checkpoint of the DB, leaving the upload of its files to the task's
// background; the memory backend's state it takes whole, as SnapshotState
// does.
func (o *windowAggOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.disk == nil || checkpoint <= 0 && len(o.wins) == 0 {
		// With no window open the state is the watermark alone.
		return donePending(o.snapshot(ctx, checkpoint))
	}
	if checkpoint <= 0 {
		return nil, fmt.Errorf("window_agg: a final snapshot of disk state that is still in use")
	}
	d := o.disk
	h := windowAggDiskHeader{hashAggStateHeader: d.probe.stateHeader(), Mark: o.mark}
	keyTypes, aggTypes := d.keyTypes, slices.Clone(d.aggTypes)
	for _, e := range slices.Sorted(maps.Keys(o.wins)) {
		w := o.wins[e]
		if err := w.writeBack(); err != nil {
			return nil, err
		}
		h.Windows = append(h.Windows, e)
		if w.keyTypes != nil {
			keyTypes = w.keyTypes
		}
		for i, s := range w.slots() {
			if dt := s.inputType(); dt != nil {
				aggTypes = vector.GrowSlice(aggTypes, len(o.cfg.Agg.Aggs))
				aggTypes[i] = dt
			}
		}
	}
	var fields []arrow.Field
	for i, dt := range keyTypes {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("key%d", i), Type: dt, Nullable: true})
	}
	for i, dt := range aggTypes {
		if dt != nil {
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("agg%d", i), Type: dt, Nullable: true})
		}
	}
	var err error
	if h.Types, err = state.WriteIPC(o.mem, arrow.NewSchema(fields, nil)); err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot("window_agg", d.db, d.files, checkpoint, windowAggDiskMagic, windowAggDiskVersion, hdr)
}

// restoreDisk makes the operator's DB the checkpoint's and opens its windows.
func (o *windowAggOp) restoreDisk(ctx context.Context, data []byte) error {
	d := o.disk
	if d == nil {
		return fmt.Errorf("window_agg: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	if !isDiskState(data, windowAggDiskMagic) {
		// A snapshot taken with no window open is the watermark alone, as the
		// memory backend writes it.
		var st windowsState
		if err := json.Unmarshal(data, &st); err != nil || len(st.Windows) > 0 {
			return fmt.Errorf("window_agg: %w: the state is on the memory backend, this operator's on disk; SET state_backend = 'memory'", state.ErrBadState)
		}
		o.mark = st.Mark
		return nil
	}
	var h windowAggDiskHeader
	m, err := decodeDiskSnapshot("window_agg", windowAggDiskMagic, windowAggDiskVersion, data, &h)
	if err != nil {
		return err
	}
	if err := d.probe.checkHeader(h.hashAggStateHeader); err != nil {
		return err
	}
	schema, recs, err := state.ReadIPC(o.mem, h.Types)
	if err != nil {
		return fmt.Errorf("window_agg: %w: types: %v", state.ErrBadState, err)
	}
	for _, r := range recs {
		r.Release()
	}
	nk := len(o.cfg.Agg.GroupBy)
	var keyTypes []arrow.DataType
	aggTypes := make([]arrow.DataType, len(o.cfg.Agg.Aggs))
	for _, f := range schema.Fields() {
		var i int
		switch {
		case strings.HasPrefix(f.Name, "key"):
			if _, err := fmt.Sscanf(f.Name, "key%d", &i); err != nil || i != len(keyTypes) || i >= nk {
				return fmt.Errorf("window_agg: %w: type of %q", state.ErrBadState, f.Name)
			}
			keyTypes = append(keyTypes, f.Type)
		default:
			if _, err := fmt.Sscanf(f.Name, "agg%d", &i); err != nil || i < 0 || i >= len(aggTypes) {
				return fmt.Errorf("window_agg: %w: type of %q", state.ErrBadState, f.Name)
			}
			aggTypes[i] = f.Type
		}
	}
	if len(keyTypes) != 0 && len(keyTypes) != nk {
		return fmt.Errorf("window_agg: %w: %d key types of %d keys", state.ErrBadState, len(keyTypes), nk)
	}
	db, err := disk.Restore(ctx, d.opts, d.files, m)
	if err != nil {
		return fmt.Errorf("window_agg: %w", err)
	}
	d.db.Close()
	d.db, d.keyTypes, d.aggTypes = db, keyTypes, aggTypes
	o.mark = h.Mark
	for _, e := range h.Windows {
		w, err := o.window(ctx, e)
		if err != nil {
			return err
		}
		w.disk.written = true
	}
	return nil
}
