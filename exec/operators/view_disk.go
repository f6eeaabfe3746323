package operators

// A materialised view on the disk state backend (SET state_backend = 'disk'):
// its rows, each distinct row with the number of times the view holds it, are
// kept in pebble (exec/state/disk), and ViewState's KeyTable and counts become
// a bounded cache in front of it, as a streaming GROUP BY's groups do
// (hashagg_disk.go). The rows a batch brings that are not cached are looked up
// in one call for the batch; past the cache's bound the rows changed since
// they were loaded are written back (a row held no more is deleted) and the
// cache is emptied.
//
// A row's key in pebble is a byte saying the row is the one-column key's NULL,
// then its key as the KeyTable encodes it; its value is its count (a uvarint).
// A read of the view (Snapshot) writes the changed rows back and scans the
// DB. Checkpoints ("HVWD") are the DB's incremental ones; the state a view's
// task ends with (checkpoint 0: its final rows, which a restore of an ended
// task reads) is the memory backend's whole "HVEW" form, which a disk-backed
// view restores into its DB.
//
// A view whose job ended keeps its DB open after Close, for the queries
// still reading it; it is closed when the operator becomes unreachable (the
// view dropped: runtime.AddCleanup).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	viewDiskMagic   = "HVWD"
	viewDiskVersion = 1
)

// ViewConfig configures kind "view".
type ViewConfig struct {
	// StateBackend, "memory" or "disk" (SET state_backend), says where the
	// view keeps its rows; "" is the TaskManager's default.
	StateBackend string `json:"state_backend,omitempty"`
}

// viewDisk is a ViewState's disk part: the DB, and which cached rows changed
// since they were loaded.
type viewDisk struct {
	db    *disk.DB
	opts  disk.Options
	files exec.StateFiles
	limit int64
	// evictions counts the times the cache was emptied.
	evictions int
	// written says the DB may hold rows: until the first write-back (or a
	// restore) a row new in the cache is new, and no lookup is needed.
	written bool
	changeSet
	// Scratch for lookups and write-backs.
	keys  [][]byte
	arena []byte
	val   []byte
}

// viewDiskHeader is the JSON header of an HVWD blob.
type viewDiskHeader struct {
	Rows int64 `json:"rows"` // the rows the view holds, each time it holds them
}

// openDisk puts the view's rows in a DB of its own.
func (v *ViewState) openDisk(tc *exec.TaskContext) error {
	d := &viewDisk{files: tc.StateFiles, opts: disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}}
	d.limit = d.opts.CacheBytes()
	db, err := disk.Open(d.opts)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	d.db = db
	v.mu.Lock()
	v.disk = d
	v.mu.Unlock()
	return nil
}

// closeDisk closes the DB, removing its files.
func (v *ViewState) closeDisk() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.disk != nil {
		v.disk.db.Close()
		v.disk = nil
	}
}

// diskKey appends row g's key in the DB to dst. Lock should be held.
func (v *ViewState) diskKey(dst []byte, g uint32) []byte {
	k, null := v.table.Key(g)
	flag := byte(0)
	if null {
		flag = 1
	}
	return append(append(dst, flag), k...)
}

// loadCounts fills the counts of the rows from first to the table's end, new
// in the cache, from the DB, and marks the batch's rows gids changed. Lock
// should be held.
func (v *ViewState) loadCounts(first int, gids []uint32) error {
	d := v.disk
	n := v.table.Len()
	d.markIDs(n, gids)
	if n == first || !d.written {
		return nil
	}
	d.arena, d.keys, _ = cacheKeys(d.arena[:0], d.keys[:0], first, n, func(dst []byte, g uint32) ([]byte, error) {
		return v.diskKey(dst, g), nil
	})
	return d.db.Get(d.keys, func(i int, val []byte) error {
		c, w := binary.Uvarint(val)
		if w <= 0 || w != len(val) || c == 0 {
			return fmt.Errorf("view: %w: a bad count in the disk state", state.ErrBadState)
		}
		v.counts[first+i] = int64(c)
		return nil
	})
}

// writeBack writes the rows changed since they were loaded to the DB,
// deleting those the view holds no more. Lock should be held.
func (v *ViewState) writeBack() error {
	d := v.disk
	if len(d.dirty) == 0 {
		return nil
	}
	d.written = true
	for lo := 0; lo < len(d.dirty); lo += writeBackChunk {
		b := d.db.NewBatch()
		var err error
		for _, g := range d.dirty[lo:min(len(d.dirty), lo+writeBackChunk)] {
			d.arena = v.diskKey(d.arena[:0], g)
			if c := v.counts[g]; c == 0 {
				err = b.Delete(d.arena)
			} else {
				d.val = binary.AppendUvarint(d.val[:0], uint64(c))
				err = b.Set(d.arena, d.val)
			}
			if err != nil {
				return fmt.Errorf("view: disk state: %w", err)
			}
			d.changed[g] = false
		}
		if err := b.Commit(); err != nil {
			return fmt.Errorf("view: disk state: %w", err)
		}
	}
	d.dirty = d.dirty[:0]
	return nil
}

// cacheBytes is the memory of the cached rows. Lock should be held.
func (v *ViewState) cacheBytes() int64 {
	return v.table.Bytes() + int64(8*cap(v.counts)+cap(v.disk.changed)+4*cap(v.gids))
}

// evictIfFull writes the changed rows back and empties the cache once it
// outgrew its bound. Lock should be held.
func (v *ViewState) evictIfFull() error {
	if v.cacheBytes() <= v.disk.limit {
		return nil
	}
	if err := v.writeBack(); err != nil {
		return err
	}
	v.table.Release()
	v.table = state.NewKeyTable()
	v.keys = state.RowKeys{}
	v.counts, v.live = v.counts[:0], 0
	v.disk.forget()
	v.disk.evictions++
	return nil
}

// scanDisk writes the changed rows back and calls fn with the DB's rows, a
// chunk at a time: a table of the chunk's distinct rows and each one's count.
// Lock should be held.
func (v *ViewState) scanDisk(fn func(t state.Keyed, counts []int64) error) error {
	if err := v.writeBack(); err != nil {
		return err
	}
	var (
		data   []byte
		offs   = []int32{0}
		nulls  []bool
		counts []int64
		gids   []uint32
	)
	flush := func() error {
		if len(counts) == 0 {
			return nil
		}
		var keys state.RowKeys
		keys.SetEncoded(v.dts, data, offs, nulls)
		t := state.NewKeyTable()
		defer t.Release()
		gids = vector.GrowSlice(gids, len(counts))
		t.InsertRows(&keys, gids)
		if t.Len() != len(counts) {
			return fmt.Errorf("view: %w: the disk state holds a row twice", state.ErrBadState)
		}
		err := fn(t, counts)
		data, offs, nulls, counts = data[:0], offs[:1], nulls[:0], counts[:0]
		return err
	}
	err := v.disk.db.Scan(nil, nil, func(k, val []byte) error {
		c, w := binary.Uvarint(val)
		if len(k) == 0 || w <= 0 || w != len(val) || c == 0 {
			return fmt.Errorf("view: %w: a bad row in the disk state", state.ErrBadState)
		}
		nulls = append(nulls, k[0] == 1)
		data = append(data, k[1:]...)
		offs = append(offs, int32(len(data)))
		counts = append(counts, int64(c))
		if len(counts) == vector.OutBatchRows {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// snapshotDisk writes the changed rows back and starts a checkpoint of the
// DB. Lock should be held.
func (v *ViewState) snapshotDisk(checkpoint int64) (exec.PendingState, error) {
	if err := v.writeBack(); err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(viewDiskHeader{Rows: v.rows})
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot("view", v.disk.db, v.disk.files, checkpoint, viewDiskMagic, viewDiskVersion, hdr)
}

// restoreDisk makes the view's DB the checkpoint's, with an empty cache.
func (v *ViewState) restoreDisk(ctx context.Context, data []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.disk == nil {
		return fmt.Errorf("view: %w: the rows are on the disk backend, this view's in memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	var h viewDiskHeader
	m, err := decodeDiskSnapshot("view", viewDiskMagic, viewDiskVersion, data, &h)
	if err != nil {
		return err
	}
	db, err := disk.Restore(ctx, v.disk.opts, v.disk.files, m)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	v.disk.db.Close()
	v.disk.db, v.disk.written = db, true
	v.disk.forget()
	v.table.Release()
	v.table, v.keys, v.counts, v.live, v.rows = state.NewKeyTable(), state.RowKeys{}, nil, 0, h.Rows
	return nil
}

var _ exec.AsyncCheckpointed = (*viewOp)(nil)

// SnapshotStateAsync takes a disk-backed view's checkpoint and leaves the
// upload of its files to the task's background; a view in memory it takes
// whole.
func (o *viewOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	v := o.state
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.disk == nil || checkpoint <= 0 {
		return donePending(v.snapshotStateLocked(memory.DefaultAllocator))
	}
	return v.snapshotDisk(checkpoint)
}

// keepOpenAfterEnd leaves the DB of a view whose job ended open for the
// queries reading it, until the operator is unreachable.
func (o *viewOp) keepOpenAfterEnd() {
	v := o.state
	runtime.AddCleanup(o, func(v *ViewState) { v.closeDisk() }, v)
}

// replicate returns the ids of rows, each counts[id] times, as a selection
// to decode: a row the view holds n times is read n times.
func replicate(ids []uint32, counts []int64) []uint32 {
	var rep []uint32
	for _, g := range ids {
		for range counts[g] {
			rep = append(rep, g)
		}
	}
	return rep
}

// allIDs returns the ids 0 to n-1.
func allIDs(n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i)
	}
	return ids
}

// writeRows writes the rows rep of t, in batches, to w.
func writeRows(w interface{ Write(arrow.RecordBatch) error }, schema *arrow.Schema, dts []arrow.DataType, t state.Keyed, rep []uint32) error {
	for lo := 0; lo < len(rep); lo += vector.OutBatchRows {
		sel := state.GroupIDs(rep[lo:min(len(rep), lo+vector.OutBatchRows)])
		cols, err := t.DecodeKeys(memory.DefaultAllocator, dts, sel)
		if err != nil {
			return err
		}
		rec, err := vector.MakeRecord(schema, cols, sel.Len())
		if err != nil {
			return err
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
