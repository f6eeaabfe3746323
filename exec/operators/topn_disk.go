package operators

// topn on the disk state backend (exec/state/disk; SET state_backend =
// 'disk'), after stream_join's (join_stream_disk.go): each partition's held
// rows live in pebble, one value per partition key, and the operator's usual
// tables (parts, rows, ps) become a cache in front of it. Before a batch is
// applied, the partitions it brings that are not cached are looked up in
// pebble in one call and their rows added (loadParts). Past the cache's
// bound, the changes pending are flushed, the partitions changed since they
// were loaded are written back (one left empty is deleted) and the cache is
// emptied, which also takes the place of compacting rows.
//
// What is written back is a partition's entries only: it is written back
// with no change pending (after a flush), when the top it last emitted is
// its top, so a partition loaded takes its top again as what it emitted.
// A value is, per entry in order: the sort key with its length, a byte
// saying the row is the NULL of a one-text-column input, and the row's
// encoded bytes (state.RowKeys) with their length. The key is a zero byte
// and the partition key, order-preserving (disk.AppendOrdered); without
// PARTITION BY, the zero byte alone.
//
// A partition is one value, so it is loaded and written whole: a partition
// (a top over an input that retracts keeps every row; without PARTITION BY
// there is one) must fit in the cache. One whose value outgrows the cache's
// bound fails the job with ErrOutOfMemory when written back, rather than be
// rewritten whole at every eviction with memory unbounded. A Top-N that
// emits once at the end (Final: a bounded input, or a window's) keeps its
// state in memory.
//
// Deduplication of the first row at the watermark (First) keeps its closed
// partitions, the state that grows with every key ever seen, in the DB as
// the value topnClosedValue; a batch that brings one not cached looks it
// up as any other partition. Its pending partitions (each holding a row the
// watermark has not yet passed, so as many as the keys of the rows within
// the watermark's delay) stay cached: an eviction writes them back and loads
// them again (cachePending), and a checkpoint lists their keys beside the
// watermark in its header, to load them again on restore.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
)

const (
	topnDiskMagic   = "HTPD"
	topnDiskVersion = 1
)

var errTopNShortValue = fmt.Errorf("topn: disk state value too short")

// topnClosedValue is the value of First's closed partition: a lone varint
// byte that says more follow, which no list of entries is.
var topnClosedValue = []byte{0xFF}

// topnDisk is a topn's disk state: the DB, and which cached partitions
// changed since they were loaded or last written back.
type topnDisk struct {
	db    *disk.DB
	opts  disk.Options
	files exec.StateFiles
	// limit bounds the cache, past it emptied; partLimit a partition's
	// value (both the cache's bound but in tests).
	limit, partLimit int64
	// written says the DB may hold partitions: until the first write-back
	// (or a restore) a partition new in the cache is new, and no lookup is
	// needed.
	written   bool
	changeSet // by partition id
	evictions int

	partTypes []arrow.DataType
	keys      [][]byte
	arena     []byte
	buf       []byte
}

// openDisk opens the operator's disk state when the backend is disk and the
// Top-N is one the backend holds (see the top of the file). First under the
// job's SET state_backend = 'disk' is an error; under the TaskManager's
// default its state stays in memory.
func (o *topnOp) openDisk(tc *exec.TaskContext) error {
	b := o.cfg.StateBackend
	if b == "" {
		b = tc.StateBackend
	}
	if b != StateDisk || o.cfg.Final && !o.cfg.First {
		if !o.cfg.Final {
			o.stateLimit = tc.StateLimit
		}
		return nil
	}
	d := &topnDisk{files: tc.StateFiles}
	d.opts = disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	d.limit = d.opts.CacheBytes()
	d.partLimit = d.limit
	_, d.partTypes = o.partSchema()
	db, err := disk.Open(d.opts)
	if err != nil {
		return fmt.Errorf("topn: %w", err)
	}
	d.db = db
	o.disk = d
	return nil
}

var _ exec.AsyncCheckpointed = (*topnOp)(nil)

// SnapshotStateAsync takes a disk state's checkpoint and leaves the upload of
// its files to the task's background; any other state it takes whole, as
// SnapshotState does.
func (o *topnOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.disk == nil || o.rows == nil {
		return donePending(o.SnapshotState(ctx, checkpoint))
	}
	return o.snapshotDisk(checkpoint)
}

func (o *topnOp) closeDisk() {
	if o.disk != nil {
		o.disk.db.Close()
		o.disk = nil
	}
}

// errStateLimit is the error of a Top-N on the memory backend whose
// partitions, n bytes, outgrew the TaskManager's bound: it fails the job
// with a clear error before the process runs out of memory.
func (o *topnOp) errStateLimit(n int64) error {
	label := o.label
	if label == "" {
		label = "topn"
	}
	return fmt.Errorf("%w: %s: its partitions hold %d MiB, more than the %d MiB a slot may keep in memory; SET state_backend = 'disk' keeps them on disk",
		exec.ErrOutOfMemory, label, n>>20, o.stateLimit>>20)
}

// errPartitionLimit is the error of a partition whose value, n bytes,
// outgrew the bound of the cache it is loaded into whole.
func (o *topnOp) errPartitionLimit(n int64) error {
	label := o.label
	if label == "" {
		label = "topn"
	}
	return fmt.Errorf("%w: %s: one partition's rows take %d KiB, more than the %d KiB cache of state_backend = 'disk', which loads and writes a partition whole; PARTITION BY a finer key, or give the TaskManager more --state-memory",
		exec.ErrOutOfMemory, label, n>>10, o.disk.partLimit>>10)
}

// cacheBytes estimates the memory the partitions hold (on the disk backend,
// the cache in front of the DB): the tables' own, and per
// row id an entry (topnEntry, a ref count and a sort key no longer than the
// row's bytes: rows holds one row per id), per partition its topnPart.
func (o *topnOp) cacheBytes() int64 {
	n := o.rows.Bytes()*2 + int64(o.rows.Len())*(48+4) + int64(len(o.ps))*96
	if o.parts != nil {
		n += o.parts.Bytes()
	}
	return n
}

// partKey appends partition pid's DB key to dst.
func (o *topnOp) partKey(dst []byte, pid uint32) ([]byte, error) {
	dst = append(dst, 0)
	if o.parts == nil {
		return dst, nil
	}
	k, null := o.parts.Key(pid)
	return disk.AppendOrdered(dst, k, null, o.disk.partTypes)
}

// loadParts fills the partitions from first to the cache's end, new in it,
// with their rows in the DB (one it lacks stays empty; First's closed one
// comes back closed), and marks every partition of the batch (o.pids, n
// rows) changed.
func (o *topnOp) loadParts(first, n int) error {
	d := o.disk
	for _, pid := range o.pids[:n] {
		o.changedPart(pid)
	}
	if !d.written || first == len(o.ps) {
		return nil
	}
	d.keys, d.arena = d.keys[:0], d.arena[:0]
	for pid := first; pid < len(o.ps); pid++ {
		start := len(d.arena)
		var err error
		if d.arena, err = o.partKey(d.arena, uint32(pid)); err != nil {
			return fmt.Errorf("topn: disk state: %w", err)
		}
		d.keys = append(d.keys, d.arena[start:len(d.arena):len(d.arena)])
	}
	// The values' rows, gathered to go into rows in one call; the sort keys
	// are copied to one buffer the entries alias.
	var data, skeys []byte
	var offs, soffs []int32
	var nulls []bool
	var owner []uint32
	err := d.db.Get(d.keys, func(i int, v []byte) error {
		if o.cfg.First && bytes.Equal(v, topnClosedValue) {
			o.ps[first+i].closed = true
			return nil
		}
		for len(v) > 0 {
			l, k := binary.Uvarint(v)
			if k <= 0 || uint64(len(v)-k) < l+1 {
				return errTopNShortValue
			}
			soffs = append(soffs, int32(len(skeys)))
			skeys = append(skeys, v[k:k+int(l)]...)
			v = v[k+int(l):]
			nulls = append(nulls, v[0] == 1)
			v = v[1:]
			if l, k = binary.Uvarint(v); k <= 0 || uint64(len(v)-k) < l {
				return errTopNShortValue
			}
			offs = append(offs, int32(len(data)))
			data = append(data, v[k:k+int(l)]...)
			v = v[k+int(l):]
			owner = append(owner, uint32(first+i))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("topn: disk state: %w", err)
	}
	if len(owner) == 0 {
		return nil
	}
	soffs = append(soffs, int32(len(skeys)))
	var rows state.RowKeys
	rows.SetEncoded(o.inTypes, data, append(offs, int32(len(data))), nulls)
	rids := make([]uint32, len(owner))
	o.rows.InsertRows(&rows, rids)
	for len(o.refs) < o.rows.Len() {
		o.refs = append(o.refs, 0)
	}
	for j, pid := range owner {
		o.seq++
		key := skeys[soffs[j]:soffs[j+1]:soffs[j+1]]
		o.ps[pid].entries.Append(topnEntry{key: key, rid: rids[j], seq: o.seq})
		o.ref(rids[j], 1)
	}
	// Written back with no change pending, what each emitted is its top
	// (First emits a partition's row when it closes, not from emitted).
	for pid := first; pid < len(o.ps) && !o.cfg.First; pid++ {
		p := o.ps[pid]
		p.emitted = o.top(p.emitted[:0], p)
		for _, r := range p.emitted {
			o.ref(r.rid, 1)
		}
	}
	return nil
}

// writeBack writes the partitions changed since they were loaded to the DB.
// No change may be pending (o.dirty empty): see the top of the file.
func (o *topnOp) writeBack() error {
	d := o.disk
	if len(o.dirty) > 0 {
		return fmt.Errorf("topn: disk state written back with changes not flushed")
	}
	b := d.db.NewBatch()
	for i, pid := range d.dirty {
		key, err := o.partKey(nil, pid)
		if err != nil {
			return fmt.Errorf("topn: disk state: %w", err)
		}
		if p := o.ps[pid]; p.closed {
			err = b.Set(key, topnClosedValue)
		} else if p.entries.Len() == 0 {
			err = b.Delete(key)
		} else if v := o.encodeEntries(p); int64(len(v)) > d.partLimit {
			return o.errPartitionLimit(int64(len(v)))
		} else {
			err = b.Set(key, v)
		}
		if err != nil {
			return fmt.Errorf("topn: disk state: %w", err)
		}
		d.changed[pid] = false
		if i%writeBackChunk == writeBackChunk-1 {
			if err := b.Commit(); err != nil {
				return fmt.Errorf("topn: disk state: %w", err)
			}
			b = d.db.NewBatch()
		}
	}
	d.dirty = d.dirty[:0]
	d.written = true
	if err := b.Commit(); err != nil {
		return fmt.Errorf("topn: disk state: %w", err)
	}
	return nil
}

// encodeEntries encodes p's entries (see the top of the file); the result
// is valid until the next call (pebble's Set copies it).
func (o *topnOp) encodeEntries(p *topnPart) []byte {
	d := o.disk
	d.buf = d.buf[:0]
	p.entries.Each(func(_ int, e *topnEntry) bool {
		d.buf = binary.AppendUvarint(d.buf, uint64(len(e.key)))
		d.buf = append(d.buf, e.key...)
		k, null := o.rows.Key(e.rid)
		flag := byte(0)
		if null {
			flag = 1
		}
		d.buf = append(d.buf, flag)
		d.buf = binary.AppendUvarint(d.buf, uint64(len(k)))
		d.buf = append(d.buf, k...)
		return true
	})
	return d.buf
}

// evictIfFull, once the cache outgrew its bound, sends the changes pending
// (a flush ahead of the task's), writes the changed partitions back and
// empties the cache.
func (o *topnOp) evictIfFull(ctx context.Context, out exec.Collector) error {
	if o.cacheBytes() <= o.disk.limit {
		return nil
	}
	if err := o.Flush(ctx, out); err != nil {
		return err
	}
	return o.evict()
}

// evict writes the changed partitions back and empties the cache, but for
// First's pending partitions, loaded again.
func (o *topnOp) evict() error {
	if err := o.writeBack(); err != nil {
		return err
	}
	pending := o.pendingKeys()
	o.reset()
	o.disk.forget()
	o.disk.evictions++
	return o.cachePending(pending)
}

// changedPart marks partition pid changed since it was loaded.
func (o *topnOp) changedPart(pid uint32) {
	o.disk.grow(len(o.ps))
	o.disk.mark(pid)
}

// topnPartKeys are partition keys as o.parts encodes them: key i is
// Data[Offs[i]:Offs[i+1]], NULL if Nulls[i] (without PARTITION BY, one
// empty key stands for the one partition).
type topnPartKeys struct {
	Data  []byte  `json:"data,omitempty"`
	Offs  []int32 `json:"offs,omitempty"`
	Nulls []bool  `json:"nulls,omitempty"`
}

// pendingKeys returns the keys of First's pending partitions.
func (o *topnOp) pendingKeys() topnPartKeys {
	ks := topnPartKeys{Offs: []int32{0}}
	for _, pid := range o.pending {
		var k []byte
		null := false
		if o.parts != nil {
			k, null = o.parts.Key(pid)
		}
		ks.Data = append(ks.Data, k...)
		ks.Offs = append(ks.Offs, int32(len(ks.Data)))
		ks.Nulls = append(ks.Nulls, null)
	}
	return ks
}

// cachePending loads First's pending partitions of keys ks, written back,
// into the emptied cache, pending again.
func (o *topnOp) cachePending(ks topnPartKeys) error {
	if len(ks.Nulls) == 0 {
		return nil
	}
	if len(ks.Offs) != len(ks.Nulls)+1 || int(ks.Offs[len(ks.Nulls)]) != len(ks.Data) {
		return fmt.Errorf("topn: %w: pending partitions' keys of %d bytes, %d offsets, %d nulls", state.ErrBadState, len(ks.Data), len(ks.Offs), len(ks.Nulls))
	}
	first := len(o.ps)
	if o.parts == nil {
		o.ps = append(o.ps, &topnPart{})
	} else {
		var keys state.RowKeys
		keys.SetEncoded(o.disk.partTypes, ks.Data, ks.Offs, ks.Nulls)
		o.parts.InsertRows(&keys, make([]uint32, len(ks.Nulls)))
		for len(o.ps) < o.partsLen() {
			o.ps = append(o.ps, &topnPart{})
		}
	}
	if err := o.loadParts(first, 0); err != nil {
		return err
	}
	for pid := first; pid < len(o.ps); pid++ {
		if p := o.ps[pid]; p.entries.Len() > 0 && !p.closed {
			p.pending = true
			o.pending = append(o.pending, uint32(pid))
		}
	}
	return nil
}

// cacheAll marks every cached partition changed: state of the memory
// backend restored into the disk backend's cache goes to the DB at the next
// write-back.
func (d *topnDisk) cacheAll(o *topnOp) {
	d.markAll(len(o.ps))
}

// topnDiskHeader is the header of an HTPD blob: what the values' encoding
// depends on.
type topnDiskHeader struct {
	Columns   int           `json:"columns"`
	Partition []int         `json:"partition"`
	Order     []SortKeySpec `json:"order"`
	// First is deduplication's; then Mark is its watermark and Pending its
	// pending partitions' keys, whose rows are in the DB.
	First   bool         `json:"first,omitempty"`
	Mark    int64        `json:"mark,omitempty"`
	Pending topnPartKeys `json:"pending,omitzero"`
}

func (o *topnOp) diskHeader() topnDiskHeader {
	h := topnDiskHeader{Columns: len(o.inTypes), Partition: o.cfg.Partition, Order: o.cfg.Order, First: o.cfg.First}
	if o.cfg.First {
		h.Mark, h.Pending = o.mark, o.pendingKeys()
	}
	return h
}

// equal reports whether the state h describes is of a Top-N g describes.
func (h topnDiskHeader) equal(g topnDiskHeader) bool {
	return h.Columns == g.Columns && slices.Equal(h.Partition, g.Partition) && slices.Equal(h.Order, g.Order) && h.First == g.First
}

// snapshotDisk writes the changed partitions back and starts a checkpoint of
// the DB; the state a task ends with it takes whole. No change may be
// pending: a barrier flushes before its snapshot.
func (o *topnOp) snapshotDisk(checkpoint int64) (exec.PendingState, error) {
	if checkpoint <= 0 {
		// The state a task ended with (StreamTask's storeFinal): once the
		// input ended nothing changes a top again, and a task restored as
		// ended runs none of its operators, so the final state is the
		// memory backend's with no rows.
		if !o.done {
			return nil, fmt.Errorf("topn: a final snapshot of disk state before the input ended")
		}
		o.reset()
		return donePending(o.snapshotMemory())
	}
	if err := o.writeBack(); err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(o.diskHeader())
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot("topn", o.disk.db, o.disk.files, checkpoint, topnDiskMagic, topnDiskVersion, hdr)
}

func (o *topnOp) restoreDisk(ctx context.Context, data []byte) error {
	if o.disk == nil {
		return fmt.Errorf("topn: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	var h topnDiskHeader
	m, err := decodeDiskSnapshot("topn", topnDiskMagic, topnDiskVersion, data, &h)
	if err != nil {
		return err
	}
	if want := o.diskHeader(); !h.equal(want) {
		return fmt.Errorf("topn: %w: state of a Top-N of %d columns partitioned by %v ordered by %v, this one is of %d by %v ordered by %v",
			state.ErrBadState, h.Columns, h.Partition, h.Order, want.Columns, want.Partition, want.Order)
	}
	db, err := disk.Restore(ctx, o.disk.opts, o.disk.files, m)
	if err != nil {
		return fmt.Errorf("topn: %w", err)
	}
	o.disk.db.Close()
	o.disk.db, o.disk.written = db, true
	o.reset()
	o.disk.changeSet = changeSet{}
	if h.First {
		o.mark = h.Mark
		return o.cachePending(h.Pending)
	}
	return nil
}
