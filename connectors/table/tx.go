package table

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Constraints are what a Tx holds the rows written to a table to.
type Constraints struct {
	Table  string // the table's name, for messages
	Schema types.Schema
	// Key are the positions of the PRIMARY KEY's columns: no two rows may have
	// equal keys, and no key column may be NULL. Empty: no key.
	Key []int
	// NotNull are the positions of further columns that may not be NULL.
	NotNull []int
}

// ConstraintError is a row refused by a table's constraints; it carries its
// SQLSTATE, as PostgreSQL's: 23505 (unique_violation) or 23502
// (not_null_violation).
type ConstraintError struct {
	Code   string
	Msg    string
	Detail string // "" for none
}

func (e *ConstraintError) Error() string { return e.Msg }

// SQLState returns e's code.
func (e *ConstraintError) SQLState() string { return e.Code }

// ErrorDetail returns the error's DETAIL line, as PostgreSQL's ("Key (id)=(1)
// already exists.").
func (e *ConstraintError) ErrorDetail() string { return e.Detail }

// segmentBatches is the most record batches a segment written by a Tx holds,
// so that a big INSERT writes several files rather than one of any size.
const segmentBatches = 16

// Tx is one statement's write to a table: rows appended to it, or (after
// Replace) rows that replace all of it, made durable and visible together by
// Commit, or dropped by Rollback. A Tx holds the table's writer lock from
// Begin to Commit or Rollback. It is not safe for concurrent use.
type Tx struct {
	s       *Store
	t       *tableState
	c       Constraints
	schema  *arrow.Schema
	alloc   memory.Allocator
	replace bool

	pending     []arrow.RecordBatch // rows not yet written: fewer than BatchRows
	pendingRows int
	w           *segmentWriter
	written     []segment // new segments, written and fsynced
	rows        int64
	keys        map[string]struct{} // the keys of this Tx's rows
	keyBuf      []byte
	done        bool
	// sinkName, if set, is the sink whose checkpoint sinkCheckpoint the Tx
	// commits (version.Sinks).
	sinkName       string
	sinkCheckpoint int64
	// change: the Tx changes rows in place (change.go): base is the version
	// it read, deleted the rows it removes, by segment position in base
	// (the log's: after the last).
	change  bool
	base    *version
	deleted map[int][]int64
}

// Begin starts a write to table id, waiting for the table's previous writer
// to finish.
func (s *Store) Begin(id string, c Constraints) (*Tx, error) {
	t, err := s.table(id)
	if err != nil {
		return nil, err
	}
	t.writer.Lock()
	tx := &Tx{s: s, t: t, c: c, schema: c.Schema.Arrow(), alloc: memory.DefaultAllocator}
	if len(c.Key) > 0 {
		tx.keys = map[string]struct{}{}
	}
	return tx, nil
}

// Replace makes the Tx's rows replace the table's instead of adding to them
// (TRUNCATE, DELETE without WHERE). It must come before the first Append, and
// before the caller reads the table: it waits until the rows of INSERTs
// still committing in a group are in the table (group.go).
func (tx *Tx) Replace() {
	tx.replace = true
	tx.t.waitGroups()
}

// Rows returns the number of rows appended so far.
func (tx *Tx) Rows() int64 { return tx.rows }

// Append adds the rows of rec, whose columns have the table's types, after
// checking them against the constraints. rec is borrowed. A refused batch
// fails the whole Tx: the caller rolls back.
func (tx *Tx) Append(rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(tx.c.Schema) {
		return fmt.Errorf("table %s: a batch of %d columns for %d", tx.c.Table, rec.NumCols(), len(tx.c.Schema))
	}
	for i := range tx.c.Schema {
		if !arrow.TypeEqual(rec.Column(i).DataType(), tx.schema.Field(i).Type) {
			return fmt.Errorf("table %s: column %s is %v in the batch", tx.c.Table, tx.c.Schema[i].Name, rec.Column(i).DataType())
		}
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if err := tx.checkNotNull(rec); err != nil {
		return err
	}
	if err := tx.checkKeys(rec); err != nil {
		return err
	}
	rec = array.NewRecordBatch(tx.schema, rec.Columns(), rec.NumRows()) // the table's field names
	tx.pending = append(tx.pending, rec)
	tx.pendingRows += int(rec.NumRows())
	tx.rows += rec.NumRows()
	for tx.pendingRows >= BatchRows {
		if err := tx.flush(BatchRows); err != nil {
			return err
		}
	}
	return nil
}

func (tx *Tx) checkNotNull(rec arrow.RecordBatch) error {
	for _, cols := range [][]int{tx.c.Key, tx.c.NotNull} {
		for _, c := range cols {
			if rec.Column(c).NullN() > 0 {
				return &ConstraintError{Code: "23502",
					Msg: fmt.Sprintf("null value in column \"%s\" of relation \"%s\" violates not-null constraint", tx.c.Schema[c].Name, tx.c.Table)}
			}
		}
	}
	return nil
}

// checkKeys refuses a row whose key the table (unless replaced) or an earlier
// row of this Tx has.
func (tx *Tx) checkKeys(rec arrow.RecordBatch) error {
	if len(tx.c.Key) == 0 {
		return nil
	}
	var existing map[string]struct{}
	if !tx.replace && !tx.change { // a change's keys are checked as it commits
		var err error
		if existing, err = tx.s.keysOf(tx.t, tx.c); err != nil {
			return err
		}
	}
	for row := 0; row < int(rec.NumRows()); row++ {
		tx.keyBuf = appendKey(tx.keyBuf[:0], rec, tx.c.Key, row)
		_, dup := tx.keys[string(tx.keyBuf)]
		if !dup && existing != nil {
			_, dup = existing[string(tx.keyBuf)]
		}
		if dup {
			return tx.duplicate(rec, row)
		}
		tx.keys[string(tx.keyBuf)] = struct{}{}
	}
	return nil
}

func (tx *Tx) duplicate(rec arrow.RecordBatch, row int) error {
	names, values := "", ""
	for i, c := range tx.c.Key {
		if i > 0 {
			names, values = names+", ", values+", "
		}
		names += tx.c.Schema[c].Name
		values += rec.Column(c).ValueStr(row)
	}
	return &ConstraintError{Code: "23505",
		Msg:    fmt.Sprintf("duplicate key value violates unique constraint \"%s_pkey\"", tx.c.Table),
		Detail: fmt.Sprintf("Key (%s)=(%s) already exists.", names, values)}
}

// flush writes the first n pending rows as one record batch.
func (tx *Tx) flush(n int) error {
	var take []arrow.RecordBatch
	got := 0
	for got < n {
		rec := tx.pending[0]
		if got+int(rec.NumRows()) <= n {
			take = append(take, rec)
			got += int(rec.NumRows())
			tx.pending = tx.pending[1:]
			continue
		}
		cut := int64(n - got)
		take = append(take, rec.NewSlice(0, cut))
		tx.pending[0] = rec.NewSlice(cut, rec.NumRows())
		rec.Release()
		got = n
	}
	tx.pendingRows -= got
	batch, err := concat(tx.schema, take, tx.alloc)
	for _, r := range take {
		r.Release()
	}
	if err != nil {
		return err
	}
	defer batch.Release()
	return tx.write(batch)
}

// write adds batch to the segment being written, starting one when needed.
func (tx *Tx) write(batch arrow.RecordBatch) error {
	if tx.w == nil {
		w, err := tx.t.newSegment(tx.schema)
		if err != nil {
			return err
		}
		tx.w = w
	}
	if err := tx.w.write(batch); err != nil {
		return err
	}
	if tx.w.batches >= segmentBatches {
		return tx.closeSegment()
	}
	return nil
}

func (tx *Tx) closeSegment() error {
	if tx.w == nil {
		return nil
	}
	seg, err := tx.w.finish()
	tx.w = nil
	if err != nil {
		return err
	}
	tx.written = append(tx.written, seg)
	return nil
}

// Commit makes the Tx's rows durable and visible to scans that pin the table
// after it returns, and releases the writer lock. On an error nothing of the
// Tx is visible.
func (tx *Tx) Commit() error {
	if tx.done {
		return fmt.Errorf("table %s: transaction already ended", tx.c.Table)
	}
	if tx.groupable() {
		return tx.commitGrouped() // group.go
	}
	commit := tx.commit
	if tx.change {
		commit = tx.commitChange // change.go
	}
	tx.t.commitMu.Lock()
	err := commit()
	tx.t.commitMu.Unlock()
	if err != nil {
		tx.Rollback()
		return err
	}
	tx.done = true
	tx.t.writer.Unlock()
	return nil
}

// writePending writes the rows not yet written and closes the segment.
func (tx *Tx) writePending() error {
	if tx.pendingRows > 0 {
		if err := tx.flush(tx.pendingRows); err != nil {
			return err
		}
	}
	return tx.closeSegment()
}

// sinks returns the sinks' checkpoints of the version after cur: cur's, and
// the one this Tx commits for its sink (sinkName), if any.
func (tx *Tx) sinks(cur *version) map[string]int64 {
	if len(cur.Sinks) == 0 && tx.sinkName == "" {
		return nil
	}
	next := maps.Clone(cur.Sinks)
	if next == nil {
		next = map[string]int64{}
	}
	if tx.sinkName != "" {
		next[tx.sinkName] = tx.sinkCheckpoint
	}
	return next
}

// commit commits the Tx's segments with a version file, which also names the
// current log: its rows stay, unless the Tx replaces the table (it read them
// and rewrote them), when the new version's log starts at its end.
func (tx *Tx) commit() error {
	if err := tx.writePending(); err != nil {
		return err
	}
	if tx.rows == 0 && !tx.replace {
		return nil
	}
	t := tx.t
	t.mu.Lock()
	cur := t.current
	t.mu.Unlock()
	n := cur.Version + 1
	next := &version{Version: n, file: n, Segments: tx.written, Log: cur.Log, LogStart: cur.LogStart,
		logEnd: cur.logEnd, logRows: cur.logRows, logRecords: cur.logRecords}
	if tx.replace {
		next.LogStart, next.logRows, next.logRecords = cur.logEnd, 0, 0
	}
	next.Sinks = tx.sinks(cur)
	own := append([]segment(nil), tx.written...) // this Tx's rows, before any merge
	if !tx.replace {
		next.Segments = append(append([]segment{}, cur.Segments...), tx.written...)
		merged, err := tx.mergeSmall(next.Segments)
		if err != nil {
			return err
		}
		next.Segments = merged
	}
	// The segments' directory entries are durable before the version that
	// names them is.
	if err := t.syncDir(); err != nil {
		return err
	}
	if err := t.writeVersion(next); err != nil {
		return err
	}
	t.mu.Lock()
	dead := t.install(next)
	kept := map[string]bool{}
	for _, seg := range next.Segments {
		kept[seg.File] = true
	}
	for _, seg := range tx.written {
		if !kept[seg.File] { // written, then merged into another by mergeSmall
			dead = append(dead, seg.File)
		}
	}
	if t.keys != nil {
		if tx.replace {
			t.keys = tx.keys
		} else {
			for k := range tx.keys {
				t.keys[k] = struct{}{}
			}
		}
	}
	followed := t.followed()
	t.mu.Unlock()
	if followed {
		// The rows are committed whether or not their changes can be
		// recorded; a follower that misses them fails on the gap.
		var deleted []segment
		if tx.replace {
			deleted = cur.Segments
		}
		if tx.replace && cur.logRecords > 0 {
			tx.recordReplacedLog(cur, next.Version, deleted, own)
		} else {
			t.recordChanges(next.Version, deleted, own)
		}
	}
	removeFiles(t.dir, dead)
	tx.written = nil
	return nil
}

// recordReplacedLog records the changes of version n, which replaced cur:
// cur's segments and log rows deleted, the segments own added.
func (tx *Tx) recordReplacedLog(cur *version, n int64, deleted, own []segment) {
	t := tx.t
	recs, err := t.logRecords(cur, memory.DefaultAllocator)
	if err != nil {
		return // the follower fails on the gap
	}
	w := &Tx{s: tx.s, t: t, schema: recs[0].Schema(), alloc: memory.DefaultAllocator, pending: recs}
	for _, r := range recs {
		w.pendingRows += int(r.NumRows())
	}
	if err := w.writePending(); err != nil {
		w.discard()
		return
	}
	t.recordChanges(n, append(append([]segment{}, deleted...), w.written...), own)
	w.discard() // the links stay
}

// Rollback drops the Tx's rows and releases the writer lock; safe to call
// after Commit.
func (tx *Tx) Rollback() {
	if tx.done {
		return
	}
	tx.done = true
	tx.discard()
	tx.t.writer.Unlock()
}

// discard drops the rows not committed and the files written for them.
func (tx *Tx) discard() {
	for _, r := range tx.pending {
		r.Release()
	}
	tx.pending = nil
	if tx.w != nil {
		tx.w.abort()
		tx.w = nil
	}
	for _, seg := range tx.written {
		os.Remove(filepath.Join(tx.t.dir, seg.File))
	}
	tx.written = nil
}

// mergeSmall rewrites the segments of fewer than BatchRows rows into full
// ones when there are more than mergeSmall of them; the others stay.
func (tx *Tx) mergeSmall(segs []segment) ([]segment, error) {
	var small, keep []segment
	for _, s := range segs {
		if s.Rows < BatchRows {
			small = append(small, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(small) <= mergeSmall {
		return segs, nil
	}
	for _, s := range small {
		err := readSegment(filepath.Join(tx.t.dir, s.File), tx.alloc, func(rec arrow.RecordBatch) error {
			tx.pending = append(tx.pending, array.NewRecordBatch(tx.schema, rec.Columns(), rec.NumRows()))
			tx.pendingRows += int(rec.NumRows())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	before := len(tx.written)
	for tx.pendingRows > 0 {
		if err := tx.flush(min(tx.pendingRows, BatchRows)); err != nil {
			return nil, err
		}
	}
	if err := tx.closeSegment(); err != nil {
		return nil, err
	}
	return append(keep, tx.written[before:]...), nil
}

// keysOf returns the encoded primary keys of t's current version, reading
// them from its segments the first time.
func (s *Store) keysOf(t *tableState, c Constraints) (map[string]struct{}, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys != nil && slices.Equal(t.keyCols, c.Key) {
		return t.keys, nil
	}
	keys := map[string]struct{}{}
	var buf []byte
	err := t.scanVersion(t.current, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
		for row := 0; row < int(rec.NumRows()); row++ {
			buf = appendKey(buf[:0], rec, c.Key, row)
			keys[string(buf)] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.keys, t.keyCols = keys, append([]int(nil), c.Key...)
	return keys, nil
}

// concat joins records of one schema into one.
func concat(schema *arrow.Schema, recs []arrow.RecordBatch, alloc memory.Allocator) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, alloc)
		if err != nil {
			for _, done := range cols[:c] {
				done.Release()
			}
			return nil, err
		}
		cols[c] = a
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, a := range cols {
		a.Release()
	}
	return rec, nil
}

// segmentWriter writes one new segment file, through a buffer: the IPC
// writer writes many small pieces.
type segmentWriter struct {
	f       *os.File
	buf     *bufio.Writer
	w       *ipc.FileWriter
	name    string
	rows    int64
	batches int
	ranges  []*valueRange // per column, as segment.Ranges
}

// newSegment starts the table's next segment file.
func (t *tableState) newSegment(schema *arrow.Schema) (*segmentWriter, error) {
	t.mu.Lock()
	name := segmentFile(t.nextFile)
	t.nextFile++
	t.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(t.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("table store: %w", err)
	}
	buf := bufio.NewWriterSize(f, 32<<10)
	w, err := ipc.NewFileWriter(buf, ipc.WithSchema(schema))
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("table store: %w", err)
	}
	return &segmentWriter{f: f, buf: buf, w: w, name: name}, nil
}

func (w *segmentWriter) write(rec arrow.RecordBatch) error {
	if err := w.w.Write(rec); err != nil {
		return fmt.Errorf("table store: %s: %w", w.name, err)
	}
	w.rows += rec.NumRows()
	w.batches++
	w.ranges = widenRanges(w.ranges, rec)
	return nil
}

// finish closes the file after fsyncing it.
func (w *segmentWriter) finish() (segment, error) {
	err := w.w.Close()
	if err == nil {
		err = w.buf.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(w.f.Name())
		return segment{}, fmt.Errorf("table store: %s: %w", w.name, err)
	}
	return segment{File: w.name, Rows: w.rows, Ranges: w.ranges}, nil
}

func (w *segmentWriter) abort() {
	w.w.Close()
	w.f.Close()
	os.Remove(w.f.Name())
}

// readSegment calls fn with each record batch of a segment file, released
// after fn returns.
func readSegment(path string, alloc memory.Allocator, fn func(arrow.RecordBatch) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(alloc))
	if err != nil {
		return fmt.Errorf("table store: %s: %w", filepath.Base(path), err)
	}
	defer r.Close()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return fmt.Errorf("table store: %s: %w", filepath.Base(path), err)
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
