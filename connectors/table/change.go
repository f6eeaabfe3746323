package table

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/vector"
)

// Changes in place. An UPDATE, a DELETE with a WHERE, or an upsert that
// touches existing keys names the rows it removes by their row ids (a scan's
// exec.RowIDColumn: the position of the row's segment in the version, and
// its row there) and appends the rows it puts in their place. Its commit
// rewrites only the segments that hold a removed row, without those rows
// (copy-on-write, a segment at a time), and the log's rows, if it removes
// one of them; every other segment stays as it is, shared with the version
// before.

// Change makes the Tx change rows in place: the rows Delete names go, those
// Append adds join. Like Replace it comes before the caller reads the table,
// which it pins for the row ids: no write commits in between (the Tx holds
// the writer lock, it waits for INSERTs committing in a group, and a fold
// takes the writer lock).
func (tx *Tx) Change() {
	tx.t.waitGroups()
	tx.change = true
	tx.t.mu.Lock()
	tx.base = tx.t.current
	tx.t.mu.Unlock()
	tx.deleted = map[int][]int64{}
}

// Delete removes the rows of the ids in ids (an exec.RowIDColumn of a scan
// pinned after Change); an id given twice removes its row once.
func (tx *Tx) Delete(ids *array.Int64) error {
	if !tx.change {
		return fmt.Errorf("table %s: Delete without Change", tx.c.Table)
	}
	for i := 0; i < ids.Len(); i++ {
		if ids.IsNull(i) {
			continue
		}
		id := ids.Value(i)
		seg := int(id >> 32)
		if seg < 0 || seg > len(tx.base.Segments) {
			return fmt.Errorf("table %s: row id %d names no segment", tx.c.Table, id)
		}
		tx.deleted[seg] = append(tx.deleted[seg], id&(1<<32-1))
	}
	return nil
}

// Deleted returns the number of rows Delete removes.
func (tx *Tx) Deleted() int64 {
	var n int64
	for _, rows := range tx.deleted {
		n += int64(len(slices.Compact(slices.Sorted(slices.Values(rows)))))
	}
	return n
}

// commitChange commits a Tx of Change: the segments that hold deleted rows
// are rewritten without them, the appended rows added, and the keys checked
// against the table's (a key may come back, as an UPDATE of other columns
// puts it). The caller holds commitMu.
func (tx *Tx) commitChange() error {
	if err := tx.writePending(); err != nil {
		return err
	}
	t := tx.t
	t.mu.Lock()
	cur := t.current
	t.mu.Unlock()
	if cur != tx.base {
		return fmt.Errorf("table %s: changed under the statement (version %d, read %d)", tx.c.Table, cur.Version, tx.base.Version)
	}
	if len(tx.deleted) == 0 && tx.rows == 0 {
		return nil
	}
	t.mu.Lock()
	followed := t.followed()
	t.mu.Unlock()
	w := &Tx{s: tx.s, t: t, schema: tx.schema, alloc: tx.alloc}
	removed := map[string]struct{}{} // the keys of the deleted rows
	var gone []arrow.RecordBatch     // the deleted rows, for followers
	defer func() {
		for _, r := range gone {
			r.Release()
		}
	}()
	var keyBuf []byte
	// cut passes on rec's rows but those of rows (sorted) at its first, the
	// segment's row of rec's first row.
	cut := func(rec arrow.RecordBatch, rows []int64, first int64) error {
		n := int64(rec.NumRows())
		var keep, drop []int32
		for i := int64(0); i < n; i++ {
			if _, ok := slices.BinarySearch(rows, first+i); ok {
				drop = append(drop, int32(i))
			} else {
				keep = append(keep, int32(i))
			}
		}
		if len(tx.c.Key) > 0 {
			for _, i := range drop {
				keyBuf = appendKey(keyBuf[:0], rec, tx.c.Key, int(i))
				removed[string(keyBuf)] = struct{}{}
			}
		}
		if followed && len(drop) > 0 {
			g, err := vector.GatherRecord(memory.DefaultAllocator, rec, drop)
			if err != nil {
				return err
			}
			gone = append(gone, g)
		}
		if len(keep) == 0 {
			return nil
		}
		g, err := vector.GatherRecord(w.alloc, rec, keep)
		if err != nil {
			return err
		}
		w.pending = append(w.pending, array.NewRecordBatch(w.schema, g.Columns(), g.NumRows()))
		w.pendingRows += len(keep)
		g.Release()
		return nil
	}
	fail := func(err error) error {
		w.discard()
		return err
	}
	var segs []segment
	for ord, seg := range cur.Segments {
		rows := tx.deleted[ord]
		if len(rows) == 0 {
			segs = append(segs, seg)
			continue
		}
		slices.Sort(rows)
		var first int64
		err := readSegment(filepath.Join(t.dir, seg.File), w.alloc, func(rec arrow.RecordBatch) error {
			err := cut(rec, rows, first)
			first += rec.NumRows()
			return err
		})
		if err == nil {
			err = w.writePending() // one segment's rows: its own file
		}
		if err != nil {
			return fail(err)
		}
	}
	n := cur.Version + 1
	next := &version{Version: n, file: n, Sinks: tx.sinks(cur), Log: cur.Log, LogStart: cur.LogStart,
		logEnd: cur.logEnd, logRows: cur.logRows, logRecords: cur.logRecords}
	if rows := tx.deleted[len(cur.Segments)]; len(rows) > 0 {
		// The log's rows that stay go to a segment; the version's log starts
		// at its end.
		slices.Sort(rows)
		var first int64
		err := t.scanVersion(&version{Log: cur.Log, LogStart: cur.LogStart, logEnd: cur.logEnd, logRecords: cur.logRecords}, w.alloc, func(rec arrow.RecordBatch) error {
			err := cut(rec, rows, first)
			first += rec.NumRows()
			return err
		})
		if err == nil {
			err = w.writePending()
		}
		if err != nil {
			return fail(err)
		}
		next.LogStart, next.logRows, next.logRecords = cur.logEnd, 0, 0
	}
	if len(tx.c.Key) > 0 {
		if err := tx.checkChangedKeys(removed); err != nil {
			return fail(err)
		}
	}
	segs = append(append(segs, w.written...), tx.written...)
	merged, err := w.mergeSmall(segs)
	if err != nil {
		return fail(err)
	}
	next.Segments = merged
	if err := t.syncDir(); err != nil {
		return fail(err)
	}
	if err := t.writeVersion(next); err != nil {
		return fail(err)
	}
	t.mu.Lock()
	dead := t.install(next)
	if t.keys != nil && slices.Equal(t.keyCols, tx.c.Key) {
		for k := range removed {
			delete(t.keys, k)
		}
		for k := range tx.keys {
			t.keys[k] = struct{}{}
		}
	} else {
		t.keys = nil
	}
	t.mu.Unlock()
	kept := map[string]bool{}
	for _, seg := range merged {
		kept[seg.File] = true
	}
	for _, seg := range append(w.written, tx.written...) {
		if !kept[seg.File] { // merged into another by mergeSmall
			dead = append(dead, seg.File)
		}
	}
	if followed {
		t.recordRows(tx.s, n, gone, nil, tx.written)
	}
	removeFiles(t.dir, dead)
	w.written, tx.written = nil, nil
	return nil
}

// checkChangedKeys refuses an appended row whose key the table holds in a
// row the Tx does not delete (removed: their keys).
func (tx *Tx) checkChangedKeys(removed map[string]struct{}) error {
	existing, err := tx.s.keysOf(tx.t, tx.c)
	if err != nil {
		return err
	}
	var clash string
	for k := range tx.keys {
		if _, ok := existing[k]; ok {
			if _, gone := removed[k]; !gone {
				clash = k
				break
			}
		}
	}
	if clash == "" {
		return nil
	}
	// The row, for the message: in a segment the Tx wrote.
	var err2 error
	for _, seg := range tx.written {
		readSegment(filepath.Join(tx.t.dir, seg.File), memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
			for row := 0; row < int(rec.NumRows()) && err2 == nil; row++ {
				if string(appendKey(nil, rec, tx.c.Key, row)) == clash {
					err2 = tx.duplicate(rec, row)
				}
			}
			return err2
		})
		if err2 != nil {
			return err2
		}
	}
	return &ConstraintError{Code: "23505", Msg: fmt.Sprintf("duplicate key value violates unique constraint \"%s_pkey\"", tx.c.Table)}
}

// scanRowIDs calls fn with each record batch of v and the row id of its first
// row (rows of a batch have consecutive ids).
func (t *tableState) scanRowIDs(v *version, alloc memory.Allocator, fn func(rec arrow.RecordBatch, first int64) error) error {
	for ord, seg := range v.Segments {
		row := int64(ord) << 32
		err := readSegment(filepath.Join(t.dir, seg.File), alloc, func(rec arrow.RecordBatch) error {
			err := fn(rec, row)
			row += rec.NumRows()
			return err
		})
		if err != nil {
			return err
		}
	}
	row := int64(len(v.Segments)) << 32
	return t.scanVersion(&version{Log: v.Log, LogStart: v.LogStart, logEnd: v.logEnd, logRecords: v.logRecords}, alloc, func(rec arrow.RecordBatch) error {
		err := fn(rec, row)
		row += rec.NumRows()
		return err
	})
}
