package operators

// stream_join on the disk state backend (exec/state/disk; SET state_backend =
// 'disk'): each side's held rows live in pebble, one value per side and join
// key, and the side's usual tables (streamJoinSide) become a cache in front
// of it. Before a batch is joined, the join keys it brings that a side has
// not cached are looked up in pebble in one call per side and their rows
// added to the side (addHeld); past the cache's bound, the keys changed since
// they were loaded are written back (a key without rows deleted) and both
// sides are emptied, which also takes the place of compacting them.
//
// A value is, per held row: a byte saying the row is the NULL of a side of
// one text column, the row's encoded bytes (state.RowKeys) with their
// length, its copies, matches and time of last write. The key is the side (0
// or 1) and the join key, order-preserving.
//
// An interval join keeps, besides, a time index: per held row a key of its
// side (2 + side), its time (order-preserving, NULL first) and its join key
// (ordered), whose value is the join key as the side's key table encodes it,
// with a NULL flag before. A watermark that puts a side's rows out of reach
// scans the other's index from its start up to the first time still in
// reach, loads those keys into the cache (intervalLoad, some at a time) and
// deletes the entries read by range; intervalExpire then drops the rows in
// the cache, and the keys changed are written back.
//
// A join with a TTL (SET state_ttl) keeps the same time index, of each held
// row's time of last write: the rows of a key written again have entries at
// their older times too, which the scan deletes on its way (the key loaded,
// its rows newer than the cut stay, their own entries later in the index).
// A tick that drops rows older than the cut scans the index up to it, loads
// those keys (expiryLoad) and drops them from the cache as the interval join
// does (ttlExpire).

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	streamJoinDiskMagic   = "HSJD"
	streamJoinDiskVersion = 1
)

// joinDisk is a stream join's disk state.
type joinDisk struct {
	db      *disk.DB
	opts    disk.Options
	files   exec.StateFiles
	limit   int64
	written bool
	// complete says every key the DB holds is in the sides' tables, loaded,
	// so a key they lack has no rows and is not looked up: so from Open
	// until the cache is first emptied, and after a restore of the memory
	// backend's state. Compacting keeps the keys whose rows all went
	// (evictIfFull), so that a key that comes back is not looked up either.
	complete bool
	// By side and key id: the key's rows are in the cache (loaded), and
	// changed since (changes).
	loaded  [2][]bool
	changes [2]changeSet
	// evictions counts the times the cache was emptied, compactions those
	// it was compacted instead (evictIfFull); lookups the keys looked up.
	evictions, compactions, lookups int

	probe    *state.KeyTable // the batch's distinct join keys
	keyEnc   state.RowKeys
	ids      []uint32
	found    []int32
	keyTypes []arrow.DataType
	buf      []byte
}

// openDisk opens the join's disk state when the backend is disk and the
// join is one that has it.
func (o *streamJoinOp) openDisk(tc *exec.TaskContext) error {
	b := o.cfg.StateBackend
	if b == "" {
		b = tc.StateBackend
	}
	if b != StateDisk {
		return nil
	}
	d := &joinDisk{files: tc.StateFiles, probe: state.NewKeyTable()}
	d.opts = disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	d.limit = d.opts.CacheBytes()
	for _, k := range o.side[0].keyCols {
		d.keyTypes = append(d.keyTypes, o.side[0].types[k])
	}
	db, err := disk.Open(d.opts)
	if err != nil {
		return fmt.Errorf("stream_join: %w", err)
	}
	d.db = db
	d.complete = true
	o.disk = d
	return nil
}

var _ exec.AsyncCheckpointed = (*streamJoinOp)(nil)

// SnapshotStateAsync takes a disk state's checkpoint and leaves the upload of
// its files to the task's background; any other state it takes whole, as
// SnapshotState does.
func (o *streamJoinOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.disk == nil || o.side[0].rows == nil {
		return donePending(o.SnapshotState(ctx, checkpoint))
	}
	return o.snapshotDisk(checkpoint)
}

func (o *streamJoinOp) closeDisk() {
	if o.disk != nil {
		o.disk.db.Close()
		o.disk.probe.Release()
		o.disk = nil
	}
}

// errStateLimit is the error of a join on the memory backend whose rows, n
// bytes, outgrew the TaskManager's bound (TaskContext.StateLimit).
func (o *streamJoinOp) errStateLimit(n int64) error {
	label := o.label
	if label == "" {
		label = "stream_join"
	}
	return fmt.Errorf("%w: %s: its rows hold %d MiB, more than the %d MiB a slot may keep in memory; SET state_backend = 'disk' keeps them on disk",
		exec.ErrOutOfMemory, label, n>>20, o.stateLimit>>20)
}

// sideBytes is the memory a side's cache holds.
func (sd *streamJoinSide) sideBytes() int64 {
	n := sd.keys.Bytes() + sd.rows.Bytes() + int64(cap(sd.rowKey)+cap(sd.pos)+cap(sd.count))*4 +
		int64(cap(sd.matches)+cap(sd.touched))*8 + int64(cap(sd.members))*24
	return n + int64(sd.live)*4
}

// load makes both sides hold the rows of the join keys of the batch rec from
// input s that they have not cached, and marks the keys the batch changes.
func (o *streamJoinOp) load(s int, rec arrow.RecordBatch) error {
	d := o.disk
	n := int(rec.NumRows())
	me := o.side[s]
	keyCols := make([]arrow.Array, len(me.keyCols))
	for i, k := range me.keyCols {
		keyCols[i] = rec.Column(k)
	}
	if err := d.keyEnc.Encode(keyCols, nil, n); err != nil {
		return err
	}
	d.probe.Release()
	d.probe = state.NewKeyTable()
	d.ids = vector.GrowSlice(d.ids, n)
	d.probe.InsertRows(&d.keyEnc, d.ids)
	// The batch's distinct keys, encoded as the sides' key tables take them.
	m := d.probe.Len()
	var data []byte
	offs := make([]int32, 0, m+1)
	var nulls []bool
	for g := range m {
		k, null := d.probe.Key(uint32(g))
		offs = append(offs, int32(len(data)))
		data = append(data, k...)
		nulls = append(nulls, null)
	}
	offs = append(offs, int32(len(data)))
	// The batch changes its own side's keys, and the other side's matches
	// of an outer side.
	return o.loadKeys(data, offs, nulls, [2]bool{s == 0 || o.outer[0], s == 1 || o.outer[1]}, [2]bool{true, true})
}

// loadKeys makes the sides the load says hold the rows of the keys data,
// offs and nulls (encoded as the sides' key tables take them) that they have
// not cached, and marks them changed on the sides change says.
func (o *streamJoinOp) loadKeys(data []byte, offs []int32, nulls []bool, change, load [2]bool) error {
	d := o.disk
	m := len(nulls)
	var keys state.RowKeys
	keys.SetEncoded(d.keyTypes, data, offs, nulls)
	lookup := d.written && !d.complete
	for side, sd := range o.side {
		if !load[side] {
			continue
		}
		d.found = vector.GrowSlice(d.found, m)
		sd.keys.FindRows(&keys, d.found)
		var want []int
		var dbKeys [][]byte
		for i, id := range d.found[:m] {
			if id >= 0 && d.loaded[side][id] {
				continue
			}
			want = append(want, i)
			if lookup {
				key, err := disk.AppendOrdered([]byte{byte(side)}, data[offs[i]:offs[i+1]], nulls[i], d.keyTypes)
				if err != nil {
					return err
				}
				dbKeys = append(dbKeys, key)
			}
		}
		// A batch whose keys are all cached still changes them: only the
		// lookup is skipped, never the marking below.
		if len(want) > 0 && lookup {
			d.lookups += len(dbKeys)
			var h heldRows
			err := d.db.GetSorted(dbKeys, func(_ int, v []byte) error { return h.parse(v) })
			if err == nil && len(h.copies) > 0 {
				var r arrow.RecordBatch
				if r, err = h.record(o, sd); err == nil {
					err = sd.addHeld(r)
					r.Release()
				}
			}
			if err != nil {
				return fmt.Errorf("stream_join: disk state: %w", err)
			}
		}
		// Every key of the batch is now in the side's table, loaded.
		ids := make([]uint32, m)
		sd.keys.InsertRows(&keys, ids)
		for len(sd.members) < sd.keys.Len() {
			sd.members = append(sd.members, nil)
		}
		d.loaded[side] = vector.GrowZero(d.loaded[side], sd.keys.Len())
		d.changes[side].grow(sd.keys.Len())
		for _, i := range want {
			d.loaded[side][ids[i]] = true
		}
		if change[side] {
			for _, id := range ids {
				d.change(side, id)
			}
		}
	}
	return nil
}

// change marks key id of side changed since it was loaded.
func (d *joinDisk) change(side int, id uint32) { d.changes[side].mark(id) }

// cacheAll marks every key the sides hold as loaded and changed: state of
// the memory backend restored into the disk backend's cache goes to the DB
// at the next write-back.
func (d *joinDisk) cacheAll(o *streamJoinOp) {
	d.complete = true
	for s, sd := range o.side {
		n := sd.keys.Len()
		d.loaded[s] = vector.GrowZero(d.loaded[s][:0], n)
		for id := range n {
			d.loaded[s][id] = true
		}
		d.changes[s].markAll(n)
	}
}

// heldRows gathers the held rows of the values a batch loads, to add them
// to a side in one go.
type heldRows struct {
	data                     []byte
	offs                     []int32
	nulls                    []bool
	copies, matches, touched []int64
}

// parse adds the rows of one value (see the top of the file).
func (h *heldRows) parse(v []byte) error {
	for len(v) > 0 {
		h.nulls = append(h.nulls, v[0] == 1)
		v = v[1:]
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			return errShortValue
		}
		h.offs = append(h.offs, int32(len(h.data)))
		h.data = append(h.data, v[k:k+int(l)]...)
		v = v[k+int(l):]
		for _, dst := range []*[]int64{&h.copies, &h.matches, &h.touched} {
			x, err := readVarint(&v)
			if err != nil {
				return err
			}
			*dst = append(*dst, x)
		}
	}
	return nil
}

// record returns the rows as a state record of side sd (stateSchema).
func (h *heldRows) record(o *streamJoinOp, sd *streamJoinSide) (arrow.RecordBatch, error) {
	n := len(h.copies)
	var rows state.RowKeys
	rows.SetEncoded(sd.types, h.data, append(h.offs, int32(len(h.data))), h.nulls)
	t := state.NewKeyTable()
	defer t.Release()
	ids := make([]uint32, n)
	t.InsertRows(&rows, ids)
	if t.Len() != n {
		return nil, fmt.Errorf("repeated rows in the values of a side")
	}
	cols, err := t.DecodeKeys(o.mem, sd.types, state.GroupRange(0, n))
	if err != nil {
		return nil, err
	}
	for _, vals := range [][]int64{h.copies, h.matches, h.touched} {
		cols = append(cols, int64Column(o.mem, vals))
	}
	return vector.MakeRecord(sd.stateSchema(), cols, n)
}

// writeBack writes the keys changed since they were loaded to the DB.
func (o *streamJoinOp) writeBack() error {
	d := o.disk
	b := d.db.NewBatch()
	for side, sd := range o.side {
		for i, id := range d.changes[side].dirty {
			k, null := sd.keys.Key(id)
			key, err := disk.AppendOrdered([]byte{byte(side)}, k, null, d.keyTypes)
			if err != nil {
				return err
			}
			if len(sd.members[id]) == 0 {
				err = b.Delete(key)
			} else {
				err = b.Set(key, o.encodeHeld(sd, sd.members[id]))
				if o.timeIndexed() {
					err = errors.Join(err, o.indexTimes(b, side, sd, id, key[1:]))
				}
			}
			if err != nil {
				return fmt.Errorf("stream_join: disk state: %w", err)
			}
			d.changes[side].changed[id] = false
			if i%writeBackChunk == writeBackChunk-1 {
				if err := b.Commit(); err != nil {
					return fmt.Errorf("stream_join: disk state: %w", err)
				}
				b = d.db.NewBatch()
			}
		}
		d.changes[side].dirty = d.changes[side].dirty[:0]
	}
	d.written = true
	if err := b.Commit(); err != nil {
		return fmt.Errorf("stream_join: disk state: %w", err)
	}
	return nil
}

// encodeHeld encodes the held rows rows of sd (see the top of the file).
func (o *streamJoinOp) encodeHeld(sd *streamJoinSide, rows []uint32) []byte {
	d := o.disk
	d.buf = d.buf[:0]
	for _, g := range rows {
		k, null := sd.rows.Key(g)
		flag := byte(0)
		if null {
			flag = 1
		}
		d.buf = append(d.buf, flag)
		d.buf = binary.AppendUvarint(d.buf, uint64(len(k)))
		d.buf = append(d.buf, k...)
		d.buf = binary.AppendVarint(d.buf, int64(sd.count[g]))
		d.buf = binary.AppendVarint(d.buf, sd.matches[g])
		d.buf = binary.AppendVarint(d.buf, sd.touched[g])
	}
	return d.buf
}

// timeIndexed says the held rows have a time index: an interval join's
// (event times) or a join's with a TTL (times of last write).
func (o *streamJoinOp) timeIndexed() bool { return o.cfg.Interval != nil || o.ttl > 0 }

// indexTimes writes the time index entries (see the top of the file) of
// the held rows of key id of side sd, whose ordered form is okey.
func (o *streamJoinOp) indexTimes(b *disk.Batch, side int, sd *streamJoinSide, id uint32, okey []byte) error {
	k, null := sd.keys.Key(id)
	val := append([]byte{0}, k...)
	if null {
		val[0] = 1
	}
	for _, g := range sd.members[id] {
		if err := b.Set(intervalIndexKey(side, sd.touched[g], okey), val); err != nil {
			return err
		}
	}
	return nil
}

// intervalIndexKey is the time index key of a row of side at time t (NULL:
// math.MinInt64, first) whose join key's ordered form is okey.
func intervalIndexKey(side int, t int64, okey []byte) []byte {
	k := binary.BigEndian.AppendUint64([]byte{byte(2 + side)}, uint64(t)^1<<63)
	return append(k, okey...)
}

// errScanDone stops a Scan early.
var errScanDone = errors.New("scan done")

// expiryLoadKeys is the keys expiryLoad loads at a time.
const expiryLoadKeys = 8192

// intervalLoad is expiryLoad of the rows of each side that the other side's
// watermark puts out of reach, for intervalExpire.
func (o *streamJoinOp) intervalLoad() (bool, error) {
	var wm [2]int64
	var sides [2]bool
	for s := range 2 {
		wm[s], sides[s] = o.intervalMark(1 - s)
	}
	iv := o.cfg.Interval
	return o.expiryLoad(sides, func(s int, t int64) bool { return t == math.MinInt64 || o.reach(s, t, iv) <= wm[s] })
}

// ttlExpire drops the rows last written before cut, those the DB holds
// loaded into the cache first, some keys at a time (expiryLoad), as
// intervalExpire does.
func (o *streamJoinOp) ttlExpire(cut int64) error {
	for {
		more, err := o.expiryLoad([2]bool{true, true}, func(_ int, t int64) bool { return t < cut })
		if err != nil {
			return err
		}
		o.expire(cut)
		if err := o.evictIfFull(); err != nil || !more {
			return err
		}
	}
}

// expiryLoad loads into the cache the keys of the rows of the sides it says
// that the DB holds and that are gone by their time (gone, which holds for
// every time up to some one, and for none after), at most expiryLoadKeys of
// them, from the time index, and deletes the index entries it read: the
// rows go once the caller drops them from the cache. It reports whether
// there may be more.
func (o *streamJoinOp) expiryLoad(sides [2]bool, gone func(s int, t int64) bool) (bool, error) {
	d := o.disk
	if !d.written {
		return false, nil
	}
	for s := range 2 {
		if !sides[s] {
			continue
		}
		lo := []byte{byte(2 + s)}
		hi := []byte{byte(3 + s)}
		var data []byte
		offs := []int32{0}
		var nulls []bool
		seen := map[string]bool{}
		more := false
		err := d.db.Scan(lo, hi, func(key, val []byte) error {
			if len(key) < 9 || len(val) < 1 {
				return fmt.Errorf("%w: a time index entry of %d bytes", state.ErrBadState, len(key))
			}
			t := int64(binary.BigEndian.Uint64(key[1:]) ^ 1<<63)
			if !gone(s, t) {
				hi = bytes.Clone(key)
				return errScanDone
			}
			if !seen[string(val)] {
				if len(seen) == expiryLoadKeys {
					hi, more = bytes.Clone(key), true
					return errScanDone
				}
				seen[string(val)] = true
				data = append(data, val[1:]...)
				offs = append(offs, int32(len(data)))
				nulls = append(nulls, val[0] == 1)
			}
			return nil
		})
		if err != nil && !errors.Is(err, errScanDone) {
			return false, fmt.Errorf("stream_join: disk state: %w", err)
		}
		if len(nulls) == 0 {
			continue
		}
		var load [2]bool
		load[s] = true
		if err := o.loadKeys(data, offs, nulls, load, load); err != nil {
			return false, fmt.Errorf("stream_join: disk state: %w", err)
		}
		b := d.db.NewBatch()
		err = b.DeleteRange(lo, hi)
		if err = errors.Join(err, b.Commit()); err != nil {
			return false, fmt.Errorf("stream_join: disk state: %w", err)
		}
		if more {
			return true, nil
		}
	}
	return false, nil
}

// evictIfFull writes the changed keys back once the cache outgrew its bound,
// and empties both sides, or compacts them when that frees enough.
func (o *streamJoinOp) evictIfFull() error {
	d := o.disk
	if o.side[0].sideBytes()+o.side[1].sideBytes() <= d.limit {
		return nil
	}
	if err := o.writeBack(); err != nil {
		return err
	}
	// Rows dropped (deleted, or out of an interval join's reach) keep their
	// place in the tables until compacted: when most are, compacting keeps
	// the rows still held cached, each key as the DB has it now.
	s0, s1 := o.side[0], o.side[1]
	if 2*(s0.live+s1.live) <= s0.rows.Len()+s1.rows.Len() {
		for s := range o.side {
			if err := o.compactKeepingKeys(s); err != nil {
				return err
			}
		}
		if o.side[0].sideBytes()+o.side[1].sideBytes() <= d.limit/2 {
			for s, sd := range o.side {
				n := sd.keys.Len()
				d.loaded[s] = vector.GrowZero(d.loaded[s][:0], n)
				d.changes[s].forget() // written back above
				d.changes[s].grow(n)
				for id := range n {
					d.loaded[s][id] = true
				}
			}
			d.compactions++
			return nil
		}
	}
	for s, sd := range o.side {
		sd.reset()
		d.loaded[s] = d.loaded[s][:0]
		d.changes[s].forget()
	}
	d.complete = false
	d.evictions++
	return nil
}

// compactKeepingKeys compacts side s, written back, keeping the keys it holds
// no rows of: those the DB has no rows of either (loaded, then written back
// empty, so deleted), which a batch that brings them again then need not
// look up (an interval join's side whose rows all went at a watermark
// looked up every key of its next batches, in vain).
func (o *streamJoinOp) compactKeepingKeys(s int) error {
	d, sd := o.disk, o.side[s]
	var data []byte
	offs := []int32{0}
	var nulls []bool
	for id := range sd.keys.Len() {
		if len(sd.members[id]) == 0 && id < len(d.loaded[s]) && d.loaded[s][id] {
			k, null := sd.keys.Key(uint32(id))
			data = append(data, k...)
			offs = append(offs, int32(len(data)))
			nulls = append(nulls, null)
		}
	}
	if err := o.compact(s); err != nil {
		return err
	}
	sd = o.side[s]
	var keys state.RowKeys
	keys.SetEncoded(d.keyTypes, data, offs, nulls)
	sd.keys.InsertRows(&keys, make([]uint32, len(nulls)))
	for len(sd.members) < sd.keys.Len() {
		sd.members = append(sd.members, nil)
	}
	return nil
}

// joinDiskHeader is the header of an HSJD blob.
type joinDiskHeader struct {
	Kind  string `json:"kind"`
	Left  int    `json:"left"` // columns of each side
	Right int    `json:"right"`
	// Interval is an interval join's bounds (its rows have a time index).
	Interval IntervalBounds `json:"interval,omitzero"`
	// TTLMillis is a join's TTL (its rows have a time index).
	TTLMillis int64 `json:"ttl_ms,omitzero"`
}

func (o *streamJoinOp) diskHeader() joinDiskHeader {
	h := joinDiskHeader{Kind: o.cfg.Kind, Left: len(o.side[0].types), Right: len(o.side[1].types), TTLMillis: o.cfg.TTLMillis}
	if o.cfg.Interval != nil {
		h.Interval = *o.cfg.Interval
	}
	return h
}

// snapshotDisk writes the changed keys back and starts a checkpoint of the
// DB; the state a task ends with it takes whole.
func (o *streamJoinOp) snapshotDisk(checkpoint int64) (exec.PendingState, error) {
	if checkpoint <= 0 {
		// The state a task ended with (StreamTask's storeFinal): once both
		// inputs ended no row will ever join the held ones, and a task
		// restored as ended runs none of its operators, so the final
		// state is the memory backend's with no rows.
		if !o.in.ended[0] || !o.in.ended[1] {
			return nil, fmt.Errorf("stream_join: a final snapshot of disk state before both inputs ended")
		}
		var sections [][]byte
		for _, sd := range o.side {
			data, err := state.WriteIPC(o.mem, sd.stateSchema())
			if err != nil {
				return nil, err
			}
			sections = append(sections, data)
		}
		return donePending(state.Encode(streamJoinStateMagic, streamJoinStateVersion, sections...), nil)
	}
	if err := o.writeBack(); err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(o.diskHeader())
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot("stream_join", o.disk.db, o.disk.files, checkpoint, streamJoinDiskMagic, streamJoinDiskVersion, hdr)
}

func (o *streamJoinOp) restoreDisk(ctx context.Context, data []byte) error {
	if o.disk == nil {
		return fmt.Errorf("stream_join: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	var h joinDiskHeader
	m, err := decodeDiskSnapshot("stream_join", streamJoinDiskMagic, streamJoinDiskVersion, data, &h)
	if err != nil {
		return err
	}
	if want := o.diskHeader(); h != want {
		return fmt.Errorf("stream_join: %w: state of a %s join of %d and %d columns (TTL %d ms), this one is %s of %d and %d (TTL %d ms)",
			state.ErrBadState, h.Kind, h.Left, h.Right, h.TTLMillis, want.Kind, want.Left, want.Right, want.TTLMillis)
	}
	db, err := disk.Restore(ctx, o.disk.opts, o.disk.files, m)
	if err != nil {
		return fmt.Errorf("stream_join: %w", err)
	}
	o.disk.db.Close()
	o.disk.db, o.disk.written, o.disk.complete = db, true, false
	for s, sd := range o.side {
		sd.reset()
		o.disk.loaded[s], o.disk.changes[s] = nil, changeSet{}
	}
	return nil
}
