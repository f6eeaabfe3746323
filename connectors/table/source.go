package table

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// followPoll is how often a following scan looks for the next commit's
// changes.
const followPoll = 20 * time.Millisecond

// source scans one pinned version of a table: subtask i of n reads record
// batches i, i+n, i+2n, ... of the version's segments in order, projected.
// Following (loc.follow), subtask 0 then goes on with the changes of every
// later commit, deletes as Delete rows, until cancelled; the other subtasks
// end after their share of the version.
//
// Its checkpointed position is the number of batches it has emitted: the
// batches it emits are the same sequence on every run (a pinned version,
// then numbered change sets), so a restored scan skips that many.
type source struct {
	loc  location
	spec exec.ConnectorSpec
	// segments are the version's files; its log's rows are those of log
	// from logStart to loc.logEnd.
	segments []string
	segOrd   []int // the position of each in the version's Segments
	nSegs    int   // the version's Segments
	// rowID is the position in the scan's Schema of its row-id column
	// (exec.RowIDColumn), -1 for none: a row's id is the position of its
	// segment in the version's Segments (of the log: after the last) << 32
	// | its row in the segment (the log).
	rowID    int
	log      string
	logStart int64
	// lookup: the scan reads its segments by their key index (lookup.go),
	// for the rows whose column keyCol lies in ranges; subtask i reads
	// segments i, i+n, ...
	lookup  bool
	keyCol  int
	ranges  []keyRange
	subtask int
	n       int
	out     *arrow.Schema
	cols    []int
	alloc   memory.Allocator
	lock    *sync.Mutex // the task's checkpoint lock, if it takes checkpoints

	// held: the task's checkpoint lock is held, by a following scan from its
	// Open through its snapshot (see Run).
	held bool
	// snapshotted is closed by SnapshotState once a following scan's
	// barrier goes out after its whole share of the version (next set):
	// subtask 0 emits no change before it (see Run). Nil without
	// checkpoints.
	snapshotted chan struct{}
	emitted     int64 // batches emitted (under lock)
	skip        int64 // batches to skip before emitting, after a restore
	// next is the version whose changes a following scan reads next, once
	// it has emitted its share of the snapshot (under lock); resume, the
	// one a restored scan goes on from (0: none, it starts with the
	// snapshot).
	next, resume int64
	store        *Store // the process's store: the scan registers as a follower
	unfollow     func()
	deletes      []exec.ChangeKind
}

var (
	_ exec.Source       = (*source)(nil)
	_ exec.Checkpointed = (*source)(nil)
)

func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	if s.loc.follow && s.store != nil && tc.Subtask == 0 {
		release, err := s.store.Follow(s.loc.id)
		if err != nil {
			return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
		}
		s.unfollow = release
	}
	v := &version{}
	if s.resume == 0 { // resumed past it, the snapshot may be gone
		var err error
		if v, err = readVersion(s.loc.dir, s.loc.file); err != nil {
			return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
		}
	}
	s.log, s.logStart = filepath.Join(s.loc.dir, v.Log), v.LogStart
	for j, seg := range v.Segments {
		if !mayMatch(s.spec.Filter, seg.Ranges) { // prune.go
			continue
		}
		s.segments = append(s.segments, filepath.Join(s.loc.dir, seg.File))
		s.segOrd = append(s.segOrd, j)
	}
	s.nSegs = len(v.Segments)
	s.rowID = -1
	if n := len(s.spec.Schema); n > 0 && s.spec.Schema[n-1].Name == exec.RowIDColumn {
		s.rowID = n - 1
	}
	if !s.loc.follow {
		s.keyCol, s.ranges, s.lookup = keyLookup(s.spec)
	}
	s.subtask, s.n = tc.Subtask, max(tc.Parallelism, 1)
	s.alloc, s.lock = tc.Alloc, tc.CheckpointLock
	if s.loc.follow && s.lock != nil {
		// No barrier passes before the snapshot: one triggered as the job
		// starts (JobOptions.CheckpointAtStart) could otherwise go out before
		// Run takes the lock, and the view would count as caught up empty.
		s.lock.Lock()
		s.held = true
		s.snapshotted = make(chan struct{})
	}
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.cols = s.spec.Columns
	if s.cols == nil {
		s.cols = make([]int, len(s.spec.Schema))
		for i := range s.cols {
			s.cols[i] = i
		}
	}
	full := s.spec.Schema.Arrow()
	fields := make([]arrow.Field, len(s.cols))
	for i, c := range s.cols {
		if c < 0 || c >= len(s.spec.Schema) {
			return fmt.Errorf("table: projected column %d out of range for %d columns", c, len(s.spec.Schema))
		}
		fields[i] = full.Field(c)
	}
	s.out = arrow.NewSchema(fields, nil)
	return nil
}

// Run emits this subtask's batches, each read from its mapped segment file
// into memory of the task's allocator, only the projected columns (the
// batches a subtask skips are not read at all).
//
// A following scan's subtasks each emit their share of the version before a
// checkpoint's barrier can pass (each holds its checkpoint lock meanwhile),
// so a view over the table is caught up by its first checkpoint; then
// subtask 0 alone follows the changes, emitting none before its own first
// barrier has gone out. Barriers are aligned downstream, so every operator
// takes all of the version's rows before any change, and a row's delete
// comes after its insert. Without checkpoints (no lock, no barriers to
// order them) subtask 0 reads the version alone.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	if s.loc.follow && (s.resume > 0 || s.lock == nil) {
		// Restored past the version (it was emitted before the
		// checkpoint), or with nothing to order the subtasks' rows.
		if s.subtask > 0 {
			return nil
		}
		s.n = 1
	}
	// A following scan holds the checkpoint lock (taken in Open) through its
	// share of the version; then around each change set alone.
	lock := func() {
		if s.lock != nil && !s.held {
			s.lock.Lock()
			s.held = true
		}
	}
	unlock := func() {
		if s.held {
			s.lock.Unlock()
			s.held = false
		}
	}
	defer unlock()
	if s.resume > 0 {
		return s.follow(ctx, s.resume, lock, unlock, out)
	}
	next := 0 // the global index of the first batch of the current segment
	for j, path := range s.segments {
		if s.lookup {
			if j%s.n == s.subtask {
				if err := s.emitLookup(ctx, path, s.segOrd[j], out); err != nil {
					return err
				}
			}
			next++
			continue
		}
		n, err := s.emitFile(ctx, path, next, s.segOrd[j], false, out)
		if err != nil {
			return err
		}
		next += n
	}
	if err := s.emitLog(ctx, next, out); err != nil {
		return err
	}
	if !s.loc.follow {
		return nil
	}
	s.next = s.loc.version + 1 // a checkpoint from here on has the version behind it
	if s.subtask > 0 {
		return nil
	}
	s.n = 1
	if s.snapshotted != nil {
		unlock()
		select {
		case <-s.snapshotted:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.follow(ctx, s.next, lock, unlock, out)
}

// follow emits the changes of version v and each later one, holding the
// checkpoint lock around each change set (and while it sets s.next, which a
// checkpoint reads under the lock).
func (s *source) follow(ctx context.Context, v int64, lock, unlock func(), out exec.Collector) error {
	lock()
	s.next = v
	for {
		cs, ok, err := readChanges(s.loc.dir, v)
		if err != nil {
			return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
		}
		if !ok {
			unlock()
			if err := s.checkGap(v); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(followPoll):
			}
			continue
		}
		lock()
		if err := s.emitChanges(ctx, cs, out); err != nil {
			return err
		}
		v++
		s.next = v
		unlock()
	}
}

// checkGap fails when version v committed without its changes recorded: a
// later version has a version file or changes (commits are serialised, and
// each records its changes before the next begins), or they were pruned.
func (s *source) checkGap(v int64) error {
	last, err := latestVersion(s.loc.dir)
	if err != nil {
		return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
	}
	if last > v {
		return fmt.Errorf("%w: table %s: the changes of its version %d are gone (kept %v); create the view again", exec.ErrBadInput, s.loc.id, v, changeRetention)
	}
	return nil
}

func (s *source) emitChanges(ctx context.Context, cs changeSet, out exec.Collector) error {
	for _, f := range cs.Deleted {
		if _, err := s.emitFile(ctx, filepath.Join(s.loc.dir, f), 0, 0, true, out); err != nil {
			return err
		}
	}
	for _, f := range cs.Added {
		if _, err := s.emitFile(ctx, filepath.Join(s.loc.dir, f), 0, 0, false, out); err != nil {
			return err
		}
	}
	return nil
}

// emitFile emits this subtask's batches of one segment file, the ord'th of
// the version, whose first batch has global index first, as deletes with
// del; it returns the file's number of batches. Batches a restore skips are
// counted, not emitted.
func (s *source) emitFile(ctx context.Context, path string, first, ord int, del bool, out exec.Collector) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	bad := func(err error) error {
		return fmt.Errorf("%w: table %s: segment %s: %w", exec.ErrBadInput, s.loc.id, filepath.Base(path), err)
	}
	seg, err := segmentMaps.acquire(path)
	if err != nil {
		return 0, bad(err)
	}
	defer seg.release()
	r, err := ipc.NewMappedFileReader(seg.data)
	if err != nil {
		return 0, bad(err)
	}
	defer r.Close()
	n := r.NumRecords()
	for i := (s.subtask - first%s.n + s.n) % s.n; i < n; i += s.n {
		if s.skip > 0 {
			s.skip--
			s.emitted++
			continue
		}
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return 0, bad(err)
		}
		var firstRow int64
		if s.rowID >= 0 {
			if firstRow, err = batchStart(r, i); err != nil {
				rec.Release()
				return 0, bad(err)
			}
		}
		cols := make([]arrow.Array, 0, len(s.cols))
		for _, c := range s.cols {
			cols = append(cols, s.column(seg, rec, c, ord, firstRow))
		}
		b := exec.Batch{Rec: array.NewRecordBatch(s.out, cols, rec.NumRows())}
		for _, c := range cols {
			c.Release()
		}
		rec.Release()
		if del {
			for len(s.deletes) < int(b.Rec.NumRows()) {
				s.deletes = append(s.deletes, exec.Delete)
			}
			b.Ops = s.deletes[:b.Rec.NumRows()]
		}
		if err := s.collect(ctx, b, out); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// emitLog emits the rows of the version's log, a batch per record (per
// statement, or group of statements, as a segment per statement would: a
// fold bounds their number), as batches first, first+1, ... of which
// subtask i emits those whose index is i modulo n.
func (s *source) emitLog(ctx context.Context, first int, out exec.Collector) error {
	if s.loc.logEnd <= s.logStart {
		return nil
	}
	k := first
	var logRow int64
	var emitErr error // of the collector: not the log's
	_, err := readLog(s.log, s.logStart, s.loc.logEnd, s.alloc, func(_ int64, rec arrow.RecordBatch) error {
		want := len(s.spec.Schema)
		if s.rowID >= 0 {
			want-- // not stored
		}
		if int(rec.NumCols()) != want {
			return fmt.Errorf("a log record of %d columns for %d", rec.NumCols(), want)
		}
		idx, first := k, logRow
		k++
		logRow += rec.NumRows()
		if idx%s.n != s.subtask {
			return nil
		}
		if s.skip > 0 {
			s.skip--
			s.emitted++
			return nil
		}
		cols := make([]arrow.Array, len(s.cols))
		var made []arrow.Array
		for i, c := range s.cols {
			if c == s.rowID {
				cols[i] = rowIDs(s.alloc, s.nSegs, first, int(rec.NumRows()))
				made = append(made, cols[i])
				continue
			}
			cols[i] = rec.Column(c)
		}
		b := exec.Batch{Rec: array.NewRecordBatch(s.out, cols, rec.NumRows())}
		for _, a := range made {
			a.Release()
		}
		emitErr = s.collect(ctx, b, out)
		return emitErr
	})
	if emitErr != nil {
		return emitErr
	}
	if err != nil {
		return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
	}
	return nil
}

// column returns column c of rec, a batch of the ord'th segment whose first
// row is the segment's row first: a view of the mapping, or made (row ids).
func (s *source) column(seg *mapping, rec arrow.RecordBatch, c, ord int, first int64) arrow.Array {
	if c == s.rowID {
		return rowIDs(s.alloc, ord, first, int(rec.NumRows()))
	}
	return seg.view(s.alloc, rec.Column(c))
}

// rowIDs returns the ids of n rows of the ord'th segment from its row first.
func rowIDs(mem memory.Allocator, ord int, first int64, n int) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(n)
	base := int64(ord)<<32 | first
	for k := 0; k < n; k++ {
		b.UnsafeAppend(base + int64(k))
	}
	return b.NewArray()
}

// batchStart returns the segment's row of the first row of its i'th batch.
func batchStart(r *ipc.FileReader, i int) (int64, error) {
	var row int64
	for k := 0; k < i; k++ {
		rec, err := r.RecordBatchAt(k)
		if err != nil {
			return 0, err
		}
		row += rec.NumRows()
		rec.Release()
	}
	return row, nil
}

// collect emits b and counts it; a bounded scan takes the checkpoint lock
// around each batch (a following one holds it around whole change sets).
func (s *source) collect(ctx context.Context, b exec.Batch, out exec.Collector) error {
	if !s.loc.follow && s.lock != nil {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	err := out.Collect(ctx, b)
	b.Rec.Release()
	s.emitted++
	return err
}

// Close lets go of the checkpoint lock a following scan took in Open, if Run
// never did.
func (s *source) Close() error {
	if s.held {
		s.lock.Unlock()
		s.held = false
	}
	if s.unfollow != nil {
		s.unfollow()
		s.unfollow = nil
	}
	return nil
}

// sourceState is the checkpointed position: of a following scan past its
// snapshot, the version whose changes come next; else the batches emitted.
type sourceState struct {
	Version int64 `json:"version"` // the version scanned, to check a restore against
	Emitted int64 `json:"emitted"`
	Next    int64 `json:"next,omitempty"`
}

// SnapshotState returns the position; the checkpoint lock is held. A
// following scan holds it from its start until it has caught up, so a
// checkpoint finds it between change sets, past the snapshot.
func (s *source) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if s.snapshotted != nil && s.next > 0 {
		select {
		case <-s.snapshotted:
		default:
			close(s.snapshotted) // its barrier goes out next, under the same lock
		}
	}
	return json.Marshal(sourceState{Version: s.loc.version, Emitted: s.emitted, Next: s.next})
}

// RestoreState makes Run skip the batches emitted before the checkpoint, or
// a following scan go on from the changes after its position (its snapshot,
// already emitted, may be gone after a restart).
func (s *source) RestoreState(ctx context.Context, data []byte) error {
	var st sourceState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("table %s: restoring a scan: %w", s.loc.id, err)
	}
	if st.Version != s.loc.version {
		return fmt.Errorf("table %s: the checkpoint is of a scan of version %d, this one reads version %d", s.loc.id, st.Version, s.loc.version)
	}
	if s.loc.follow && st.Next > 0 {
		s.resume = st.Next
		return nil
	}
	s.skip, s.emitted = st.Emitted, 0
	return nil
}
