package operators

// session_agg on the disk state backend (exec/state/disk; SET state_backend =
// 'disk'). The rows held (pending) are the cache: batches are kept as on the
// memory backend, and once they outgrow the cache's bound
// (disk.Options.CacheBytes) every row goes to one pebble DB and the cache
// empties. A session closes as on the memory backend while the DB holds no
// row; after that, a watermark that may close a session writes the cache
// out and closes them from the DB.
//
// Two families of keys. A row: 0x00, its group key (4 bytes of length, big
// endian, then the key as state.RowKeys encodes the Keys columns, a NULL
// flag before it), its start (order-preserving), a sequence number; its
// value is its end (8 bytes) and the row as state.RowKeys encodes all its
// columns. So a key's rows are one range, in the order of their starts,
// which is the order the memory backend merges them in. The end index:
// 0x01, a row's end (order-preserving), its group key as above; no value. A
// session ends at the greatest end of its rows, so the sessions the
// watermark closes are among the keys of the index entries up to it: a scan
// from the index's start finds them, each key's rows are merged into
// sessions in a scan of its range, the closed ones' rows go to a hash_agg
// and are deleted, and the index entries read are deleted by range.
//
// Its checkpoint ("SESD") writes the cache out and holds the watermark, the
// next sequence number and the DB's manifest (only the files new since the
// last checkpoint are uploaded).

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	sessionDiskMagic   = "SESD"
	sessionDiskVersion = 1
	// sessionEmitChunk is the rows of closed sessions decoded at a time.
	sessionEmitChunk = 8192
)

// sessionDisk is a session_agg's disk state.
type sessionDisk struct {
	db      *disk.DB
	opts    disk.Options
	files   exec.StateFiles
	limit   int64
	bytes   int64 // of the cached batches (vector.RecordBytes)
	written bool  // the DB may hold rows
	seq     uint64
	// evictions counts the cache's write-outs, closes the watermarks that
	// closed sessions from the DB (tests read both).
	evictions, closes int

	keyEnc, rowEnc state.RowKeys
	// schema is the input's, and types its column types, once known.
	schema *arrow.Schema
	types  []arrow.DataType
}

// openDisk opens the operator's disk state when its backend is disk.
func (o *sessionAggOp) openDisk(tc *exec.TaskContext) error {
	if spoolBackend(o.cfg.StateBackend, tc) != StateDisk {
		return nil
	}
	opts := disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	db, err := disk.Open(opts)
	if err != nil {
		return fmt.Errorf("session_agg: %w", err)
	}
	o.disk = &sessionDisk{db: db, opts: opts, files: tc.StateFiles, limit: opts.CacheBytes()}
	return nil
}

func (d *sessionDisk) setSchema(s *arrow.Schema) {
	d.schema, d.types = s, nil
	for _, f := range s.Fields() {
		d.types = append(d.types, f.Type)
	}
}

// sessionGroupKey appends the group key part of a key (see the top of the
// file).
func sessionGroupKey(dst, key []byte, null bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)+1))
	if null {
		return append(dst, 1)
	}
	return append(append(dst, 0), key...)
}

// orderedTime appends time t order-preserving (big endian, the sign bit
// flipped), as disk.AppendOrdered writes a timestamp.
func orderedTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^1<<63)
}

// cached notes batch b, just added to the cache, and writes the cache out
// once it outgrew its bound.
func (o *sessionAggOp) cached(b exec.Batch) error {
	d := o.disk
	d.bytes += vector.RecordBytes(b.Rec)
	if d.bytes <= d.limit {
		return nil
	}
	d.evictions++
	return o.writeOut()
}

// writeOut writes every cached row to the DB and empties the cache.
func (o *sessionAggOp) writeOut() error {
	d := o.disk
	if len(o.pending) == 0 {
		return nil
	}
	wb := d.db.NewBatch()
	n := 0
	for _, b := range o.pending {
		rec := b.Rec
		rows := int(rec.NumRows())
		if d.schema == nil {
			d.setSchema(rec.Schema())
		}
		keyCols := make([]arrow.Array, len(o.cfg.Keys))
		for i, k := range o.cfg.Keys {
			keyCols[i] = rec.Column(k)
		}
		if err := d.keyEnc.Encode(keyCols, nil, rows); err != nil {
			return err
		}
		if err := d.rowEnc.Encode(rec.Columns(), nil, rows); err != nil {
			return err
		}
		starts := rec.Column(o.cfg.Start).(*array.Timestamp).TimestampValues()
		ends := rec.Column(o.cfg.End).(*array.Timestamp).TimestampValues()
		var key, idx, val []byte
		for i := range rows {
			gk := sessionGroupKey(nil, d.keyEnc.Key(i), d.keyEnc.Null(i))
			key = append(append(key[:0], 0), gk...)
			key = orderedTime(key, int64(starts[i]))
			key = binary.BigEndian.AppendUint64(key, d.seq)
			d.seq++
			val = binary.BigEndian.AppendUint64(val[:0], uint64(ends[i]))
			val = append(val, d.rowEnc.Key(i)...)
			idx = append(orderedTime(append(idx[:0], 1), int64(ends[i])), gk...)
			if err := errors.Join(wb.Set(key, val), wb.Set(idx, nil)); err != nil {
				return fmt.Errorf("session_agg: disk state: %w", err)
			}
			if n++; n%writeBackChunk == 0 {
				if err := wb.Commit(); err != nil {
					return fmt.Errorf("session_agg: disk state: %w", err)
				}
				wb = d.db.NewBatch()
			}
		}
		b.Rec.Release()
	}
	o.pending = nil
	d.bytes, d.written = 0, true
	if err := wb.Commit(); err != nil {
		return fmt.Errorf("session_agg: disk state: %w", err)
	}
	return nil
}

// closeDisk is close once the DB may hold rows: it emits the aggregates of
// the sessions the watermark closed, from the DB.
func (o *sessionAggOp) closeDisk(ctx context.Context, out exec.Collector) error {
	d := o.disk
	// The index entries of rows whose own session closed: up to mark + 1,
	// exclusive of their last instant.
	var hi []byte
	if o.mark < math.MaxInt64-1 {
		hi = orderedTime([]byte{1}, o.mark+2)
	} else {
		hi = []byte{2}
	}
	found := false
	err := d.db.Scan([]byte{1}, hi, func(_, _ []byte) error { found = true; return errScanDone })
	if err != nil && !errors.Is(err, errScanDone) {
		return fmt.Errorf("session_agg: disk state: %w", err)
	}
	if !found && o.soonest > o.mark {
		return nil
	}
	if err := o.writeOut(); err != nil {
		return err
	}
	d.closes++
	agg, err := newHashAgg(o.cfg.Agg, o.spec)
	if err != nil {
		return err
	}
	defer agg.Close(ctx)
	if err := agg.Open(ctx, o.tc); err != nil {
		return err
	}
	// The keys to look at, in the order of the index.
	var groups [][]byte
	seen := map[string]bool{}
	err = d.db.Scan([]byte{1}, hi, func(k, _ []byte) error {
		gk := k[9:]
		if !seen[string(gk)] {
			seen[string(gk)] = true
			groups = append(groups, bytes.Clone(gk))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("session_agg: disk state: %w", err)
	}
	var chunk sessionChunk
	wb := d.db.NewBatch()
	for _, gk := range groups {
		prefix := append([]byte{0}, gk...)
		// The key's rows, in order of their starts, merged into sessions.
		var rows []sessionRow
		flush := func() error {
			if len(rows) == 0 {
				return nil
			}
			s, e := rows[0].start, rows[0].end
			for _, r := range rows[1:] {
				e = max(e, r.end)
			}
			if e-1 <= o.mark {
				for _, r := range rows {
					chunk.add(r.row, s, e)
				}
				if err := wb.DeleteRange(rows[0].key, append(bytes.Clone(rows[len(rows)-1].key), 0)); err != nil {
					return err
				}
				if len(chunk.starts) >= sessionEmitChunk {
					if err := o.aggChunk(ctx, agg, &chunk, out); err != nil {
						return err
					}
				}
			}
			rows = rows[:0]
			return nil
		}
		end := int64(math.MinInt64)
		err := d.db.Scan(prefix, prefixEnd(prefix), func(k, v []byte) error {
			if len(k) != len(prefix)+16 || len(v) < 8 {
				return fmt.Errorf("%w: a row of %d bytes", state.ErrBadState, len(v))
			}
			start := int64(binary.BigEndian.Uint64(k[len(prefix):]) ^ 1<<63)
			if len(rows) > 0 && start >= end {
				if err := flush(); err != nil {
					return err
				}
			}
			r := sessionRow{key: bytes.Clone(k), start: start, end: int64(binary.BigEndian.Uint64(v)), row: bytes.Clone(v[8:])}
			if len(rows) == 0 {
				end = r.end
			}
			end = max(end, r.end)
			rows = append(rows, r)
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return fmt.Errorf("session_agg: disk state: %w", err)
		}
	}
	if err := o.aggChunk(ctx, agg, &chunk, out); err != nil {
		return err
	}
	err = errors.Join(wb.DeleteRange([]byte{1}, hi), wb.Commit())
	if err != nil {
		return fmt.Errorf("session_agg: disk state: %w", err)
	}
	o.soonest = math.MaxInt64 // every row is in the DB, which the index covers
	return agg.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rowsOnly{out})
}

// prefixEnd is the least key after every key with prefix p (p's last byte
// is never 0xff here: it ends a group key's encoding or is a family byte).
func prefixEnd(p []byte) []byte {
	e := bytes.Clone(p)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] != 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

// sessionRow is a row read from the DB.
type sessionRow struct {
	key        []byte
	start, end int64
	row        []byte
}

// sessionChunk gathers encoded rows of closed sessions, with their
// sessions' bounds.
type sessionChunk struct {
	data         []byte
	offs         []int32
	starts, ends []int64
}

func (c *sessionChunk) add(row []byte, start, end int64) {
	if len(c.offs) == 0 {
		c.offs = append(c.offs, 0)
	}
	c.data = append(c.data, row...)
	// A sequence column, so that equal rows stay apart in the KeyTable that
	// decodes them.
	c.data = append(c.data, 1)
	c.data = binary.LittleEndian.AppendUint64(c.data, uint64(len(c.starts)))
	c.offs = append(c.offs, int32(len(c.data)))
	c.starts, c.ends = append(c.starts, start), append(c.ends, end)
}

// aggChunk decodes the chunk's rows, puts their sessions' bounds in place of
// their own, folds them into agg and empties the chunk.
func (o *sessionAggOp) aggChunk(ctx context.Context, agg *hashAggOp, c *sessionChunk, out exec.Collector) error {
	n := len(c.starts)
	if n == 0 {
		return nil
	}
	d := o.disk
	types := append(append([]arrow.DataType{}, d.types...), arrow.PrimitiveTypes.Int64)
	var rows state.RowKeys
	rows.SetEncoded(types, c.data, c.offs, nil)
	t := state.NewKeyTable()
	defer t.Release()
	ids := make([]uint32, n)
	t.InsertRows(&rows, ids)
	cols, err := t.DecodeKeys(o.mem, types, state.GroupRange(0, n))
	if err != nil {
		return err
	}
	cols[len(cols)-1].Release()
	cols = cols[:len(cols)-1]
	tsType := d.types[o.cfg.Start].(*arrow.TimestampType)
	bound := func(v []int64) arrow.Array {
		bld := array.NewTimestampBuilder(o.mem, tsType)
		defer bld.Release()
		bld.Reserve(n)
		for _, x := range v {
			bld.UnsafeAppend(arrow.Timestamp(x))
		}
		return bld.NewArray()
	}
	cols[o.cfg.Start].Release()
	cols[o.cfg.End].Release()
	cols[o.cfg.Start], cols[o.cfg.End] = bound(c.starts), bound(c.ends)
	rec, err := vector.MakeRecord(d.schema, cols, n)
	if err != nil {
		return err
	}
	defer rec.Release()
	*c = sessionChunk{data: c.data[:0], offs: c.offs[:1], starts: c.starts[:0], ends: c.ends[:0]}
	return agg.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, out)
}

// sessionDiskHeader is the JSON header of a SESD blob.
type sessionDiskHeader struct {
	Mark int64  `json:"mark"`
	Seq  uint64 `json:"seq"`
	// Types is the input's schema, once known (Arrow IPC).
	Types []byte `json:"types,omitempty"`
}

// SnapshotStateAsync writes the cache out and takes a checkpoint of the DB,
// leaving the upload of its files to the task's background; the memory
// backend's state, and a final one (every session closed), it takes whole.
func (o *sessionAggOp) SnapshotStateAsync(ctx context.Context, checkpoint int64) (exec.PendingState, error) {
	if o.disk == nil || checkpoint <= 0 {
		if o.disk != nil && o.disk.written && o.mark != math.MaxInt64 {
			return nil, fmt.Errorf("session_agg: a final snapshot of disk state that is still in use")
		}
		return donePending(o.snapshotMemory(ctx, checkpoint))
	}
	d := o.disk
	if err := o.writeOut(); err != nil {
		return nil, err
	}
	h := sessionDiskHeader{Mark: o.mark, Seq: d.seq}
	if d.schema != nil {
		var err error
		if h.Types, err = state.WriteIPC(o.mem, d.schema); err != nil {
			return nil, err
		}
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot("session_agg", d.db, d.files, checkpoint, sessionDiskMagic, sessionDiskVersion, hdr)
}

// restoreDisk makes the operator's DB the checkpoint's.
func (o *sessionAggOp) restoreDisk(ctx context.Context, data []byte) error {
	d := o.disk
	if d == nil {
		return fmt.Errorf("session_agg: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", state.ErrBadState)
	}
	var h sessionDiskHeader
	m, err := decodeDiskSnapshot("session_agg", sessionDiskMagic, sessionDiskVersion, data, &h)
	if err != nil {
		return err
	}
	var schema *arrow.Schema
	if h.Types != nil {
		var recs []arrow.RecordBatch
		if schema, recs, err = state.ReadIPC(o.mem, h.Types); err != nil {
			return fmt.Errorf("session_agg: %w: types: %v", state.ErrBadState, err)
		}
		releaseRecords(recs)
	}
	db, err := disk.Restore(ctx, d.opts, d.files, m)
	if err != nil {
		return fmt.Errorf("session_agg: %w", err)
	}
	d.db.Close()
	d.db, d.seq, d.written = db, h.Seq, true
	if schema != nil {
		d.setSchema(schema)
	}
	o.mark = h.Mark
	o.soonest = math.MinInt64
	return nil
}
