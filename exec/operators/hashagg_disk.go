package operators

// hash_agg on the disk state backend (exec/state/disk; SET state_backend =
// 'disk'): a streaming (AggEmitUpdates) complete or final aggregation with
// GROUP BY keeps its groups in pebble, and its usual in-memory state, the
// KeyTable and the aggregates' columns, becomes a bounded cache in front of it
// (the package doc of exec/state/disk has the design). Batches whose groups
// are cached run the memory backend's loops unchanged; the groups a batch
// brings that are not cached are looked up in pebble in one call for the
// batch and decoded into their new slots. Past the cache's bound the
// operator emits its pending changes, writes the groups changed since they
// were loaded back (deleting those with no rows left and none emitted), and
// empties the cache.
//
// A group's value in pebble: a byte saying its row is out downstream, its
// row count, then each aggregate's part (hashagg_slots.go).
//
// Its checkpoint ("HAGD") is the header of hash_agg's memory state, the
// aggregates' input types (an Arrow schema) and the DB's checkpoint manifest:
// the files themselves are uploaded to the checkpoint store, only those new
// since the last checkpoint (disk.DB.Checkpoint).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

// State backends (HashAggConfig.StateBackend, TaskContext.StateBackend).
const (
	StateMemory = "memory"
	StateDisk   = "disk"
)

const (
	hashAggDiskMagic   = "HAGD"
	hashAggDiskVersion = 1
)

// aggDisk is a hash_agg's disk state: the DB, and which cached groups
// changed since they were loaded or last written back.
type aggDisk struct {
	db    *disk.DB
	opts  disk.Options
	files exec.StateFiles
	limit int64
	// evictions counts the times the cache was emptied.
	evictions int
	// written says the DB may hold groups: until the first write-back (or a
	// restore) a group new in the cache is new, and no lookup is needed.
	written bool
	// prefix starts each key of a window's aggregation (window_agg_disk.go):
	// the window's end, so that a window's groups are one range of the DB,
	// which the operator's windows share (shared: closing a window leaves it
	// open). A shared DB's values carry the group's key as the table encodes
	// it, after the flag, for closing the window to emit its groups from a
	// scan.
	prefix []byte
	shared bool
	changeSet
	// Scratch for lookups and write-backs.
	keys  [][]byte
	arena []byte
	ids   []uint32
	loads [][]byte // values loaded, aliasing one buffer
	vals  [][]byte // values to write, each its own buffer
}

// stateBackend returns the backend the operator's state is on: disk only
// where it is implemented, a streaming aggregation with GROUP BY that is not
// a partial one (whose state is only what it emits at the next flush).
func (o *hashAggOp) stateBackend(tc *exec.TaskContext) string {
	b := o.cfg.StateBackend
	if b == "" {
		b = tc.StateBackend
	}
	if b != StateDisk || !o.updates || o.cfg.Phase == AggPartial || len(o.keyCols) == 0 {
		return StateMemory
	}
	return StateDisk
}

// openDisk opens the operator's disk state.
func (o *hashAggOp) openDisk(tc *exec.TaskContext) error {
	d := &aggDisk{files: tc.StateFiles}
	d.opts = disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	d.limit = d.opts.CacheBytes()
	db, err := disk.Open(d.opts)
	if err != nil {
		return fmt.Errorf("hash_agg: %w", err)
	}
	d.db = db
	o.disk = d
	return nil
}

// slots returns the aggregates, then the row count (in updates mode), as
// openDisk checked they are.
func (o *hashAggOp) slots() []aggregate {
	out := make([]aggregate, 0, len(o.aggs)+1)
	for _, a := range o.aggs {
		out = append(out, a.(aggregate))
	}
	if o.rows != nil {
		out = append(out, o.rows)
	}
	return out
}

// cutValueKey splits a shared DB's value, past its flag, into the group's
// key as the table encodes it and the rest.
func cutValueKey(v []byte) (key, rest []byte, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return nil, nil, errShortValue
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

// cacheBytes is the memory of the cached groups.
func (o *hashAggOp) cacheBytes() int64 {
	n := o.table.Bytes() + int64(cap(o.emitted)+cap(o.isDirty)+cap(o.disk.changed))
	if o.rows != nil {
		n += o.rows.memBytes()
	}
	for _, a := range o.aggs {
		n += a.memBytes()
	}
	return n
}

// loadGroups fills the slots from first to the table's end, groups new in the
// cache, with their state in the DB (a group it lacks stays empty), and marks
// the batch's groups gids changed.
func (o *hashAggOp) loadGroups(first int, gids []uint32) error {
	d := o.disk
	n := o.table.Len()
	d.markIDs(n, gids)
	if n == first || !d.written {
		return nil
	}
	var err error
	d.arena, d.keys, err = cacheKeys(d.arena[:0], d.keys[:0], first, n, func(dst []byte, g uint32) ([]byte, error) {
		k, null := o.table.Key(g)
		return disk.AppendOrdered(append(dst, d.prefix...), k, null, o.keyTypes)
	})
	if err != nil {
		return err
	}
	d.ids, d.loads = d.ids[:0], d.loads[:0]
	var vals []byte
	var ends []int
	get := d.db.Get
	if d.shared {
		// A window's groups are one range of the DB: one pass over it.
		get = d.db.GetSorted
	}
	if err := get(d.keys, func(i int, v []byte) error {
		d.ids = append(d.ids, uint32(first+i))
		vals = append(vals, v...)
		ends = append(ends, len(vals))
		return nil
	}); err != nil {
		return err
	}
	o.emitted = vector.GrowZero(o.emitted, n)
	start := 0
	for i, g := range d.ids {
		v := vals[start:ends[i]]
		start = ends[i]
		if len(v) == 0 {
			return fmt.Errorf("hash_agg: empty disk state value")
		}
		o.emitted[g] = v[0] == 1
		v = v[1:]
		if d.shared {
			if _, v, err = cutValueKey(v); err != nil {
				return err
			}
		}
		d.loads = append(d.loads, v)
	}
	for _, s := range o.slots() {
		if err := s.decodeSlots(d.ids, d.loads, n); err != nil {
			return err
		}
	}
	for _, v := range d.loads {
		if len(v) != 0 {
			return fmt.Errorf("hash_agg: disk state value has %d stray bytes", len(v))
		}
	}
	return nil
}

// writeBack writes the groups changed since they were loaded to the DB:
// deleting a group with no rows whose row is not out downstream (its delete
// went out), else setting its value.
func (o *hashAggOp) writeBack() error {
	d := o.disk
	if len(d.dirty) == 0 {
		return nil
	}
	n := o.table.Len()
	o.emitted = vector.GrowZero(o.emitted, n)
	if o.rows != nil {
		o.rows.counts = vector.PoolInt64.GrowZero(o.rows.counts, n)
	}
	for _, s := range o.slots() {
		// Decoding no group grows the columns to n, which encoding reads.
		if err := s.decodeSlots(nil, nil, n); err != nil {
			return err
		}
	}
	d.written = true
	for lo := 0; lo < len(d.dirty); lo += writeBackChunk {
		if err := o.writeBackChunk(d.dirty[lo:min(len(d.dirty), lo+writeBackChunk)]); err != nil {
			return err
		}
	}
	d.dirty = d.dirty[:0]
	return nil
}

// writeBackChunk is the groups a write-back encodes and commits at a time:
// their values' buffers are reused from chunk to chunk, and a pebble batch
// stays well below a memtable (a larger one is kept whole until flushed).
const writeBackChunk = 8192

// writeBackChunk writes the groups gids back in one batch.
func (o *hashAggOp) writeBackChunk(gids []uint32) error {
	d := o.disk
	for len(d.vals) < len(gids) {
		d.vals = append(d.vals, nil)
	}
	vals := d.vals[:len(gids)]
	for i, g := range gids {
		flag := byte(0)
		if o.emitted[g] {
			flag = 1
		}
		vals[i] = append(vals[i][:0], flag)
		if d.shared {
			k, _ := o.table.Key(g)
			vals[i] = binary.AppendUvarint(vals[i], uint64(len(k)))
			vals[i] = append(vals[i], k...)
		}
	}
	for _, s := range o.slots() {
		s.encodeSlots(gids, vals)
	}
	b := d.db.NewBatch()
	var err error
	for i, g := range gids {
		k, null := o.table.Key(g)
		if d.arena, err = disk.AppendOrdered(append(d.arena[:0], d.prefix...), k, null, o.keyTypes); err != nil {
			return err
		}
		if o.rows != nil && o.rows.counts[g] == 0 && !o.emitted[g] {
			err = b.Delete(d.arena)
		} else {
			err = b.Set(d.arena, vals[i])
		}
		if err != nil {
			return fmt.Errorf("hash_agg: disk state: %w", err)
		}
		d.changed[g] = false
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("hash_agg: disk state: %w", err)
	}
	return nil
}

// evict, once the cache outgrew its bound, emits the pending changes, writes
// the changed groups back and empties the cache.
func (o *hashAggOp) evict(ctx context.Context, out exec.Collector) error {
	if err := o.Flush(ctx, out); err != nil {
		return err
	}
	if err := o.writeBack(); err != nil {
		return err
	}
	o.clearCache()
	o.disk.evictions++
	return nil
}

// clearCache empties the cache, whose changed groups are written back.
func (o *hashAggOp) clearCache() {
	o.table.Release()
	o.table = state.NewKeyTable()
	for _, s := range o.slots() {
		s.clearSlots()
	}
	o.emitted, o.isDirty = o.emitted[:0], o.isDirty[:0]
	o.disk.forget()
}

// errStateLimit is the error of a streaming aggregation on the memory backend
// whose groups, n bytes, outgrew the TaskManager's bound: it fails the job
// with a clear error before the process runs out of memory.
func (o *hashAggOp) errStateLimit(n int64) error {
	label := o.spec.Label
	if label == "" {
		label = "hash_agg"
	}
	return fmt.Errorf("%w: %s: its groups hold %d MiB, more than the %d MiB a slot may keep in memory; SET state_backend = 'disk' keeps them on disk",
		exec.ErrOutOfMemory, label, n>>20, o.stateLimit>>20)
}

var _ exec.AsyncCheckpointed = (*hashAggOp)(nil)

// SnapshotStateAsync takes a disk state's checkpoint and leaves the upload of
// its files to the task's background; any other state it takes whole, as
// SnapshotState does.
func (o *hashAggOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.disk == nil || o.done || o.spill != nil {
		return donePending(o.SnapshotState(ctx, checkpoint))
	}
	if err := o.snapshotReady(); err != nil {
		return nil, err
	}
	return o.snapshotDisk(checkpoint)
}

// closeDisk closes the DB, removing its files.
func (o *hashAggOp) closeDisk() {
	if o.disk != nil {
		if !o.disk.shared {
			o.disk.db.Close()
		}
		o.disk = nil
	}
}

// hashAggDiskHeader is the JSON header of an HAGD blob.
type hashAggDiskHeader struct {
	hashAggStateHeader
	// Types has a field "agg<i>" of aggregate i's input type, once known.
	Types []byte `json:"types"`
}

// snapshotDisk writes the changed groups back and starts a checkpoint of
// the DB.
func (o *hashAggOp) snapshotDisk(checkpoint int64) (exec.PendingState, error) {
	if checkpoint <= 0 {
		return nil, fmt.Errorf("hash_agg: a final snapshot of disk state that is still in use")
	}
	if err := o.writeBack(); err != nil {
		return nil, err
	}
	h := hashAggDiskHeader{hashAggStateHeader: o.stateHeader()}
	h.Seen = o.seen
	var fields []arrow.Field
	for i, s := range o.slots()[:len(o.aggs)] {
		if dt := s.inputType(); dt != nil {
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
	return startDiskSnapshot("hash_agg", o.disk.db, o.disk.files, checkpoint, hashAggDiskMagic, hashAggDiskVersion, hdr)
}

// restoreDisk makes the operator's DB the checkpoint's.
func (o *hashAggOp) restoreDisk(ctx context.Context, data []byte) error {
	if o.disk == nil {
		return fmt.Errorf("hash_agg: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	var h hashAggDiskHeader
	m, err := decodeDiskSnapshot("hash_agg", hashAggDiskMagic, hashAggDiskVersion, data, &h)
	if err != nil {
		return err
	}
	if err := o.checkHeader(h.hashAggStateHeader); err != nil {
		return err
	}
	schema, recs, err := state.ReadIPC(o.mem, h.Types)
	if err != nil {
		return fmt.Errorf("hash_agg: %w: types: %v", state.ErrBadState, err)
	}
	for _, r := range recs {
		r.Release()
	}
	for _, f := range schema.Fields() {
		var i int
		if _, err := fmt.Sscanf(f.Name, "agg%d", &i); err != nil || i < 0 || i >= len(o.aggs) {
			return fmt.Errorf("hash_agg: %w: type of %q", state.ErrBadState, f.Name)
		}
		if err := o.slots()[i].setInputType(f.Type); err != nil {
			return fmt.Errorf("hash_agg: %w: %v", state.ErrBadState, err)
		}
	}
	db, err := disk.Restore(ctx, o.disk.opts, o.disk.files, m)
	if err != nil {
		return fmt.Errorf("hash_agg: %w", err)
	}
	o.disk.db.Close()
	o.disk.db, o.disk.written = db, true
	o.seen = h.Seen
	return nil
}
