package operators

// The disk state backend (exec/state/disk; SET state_backend = 'disk') for
// the windowed operators whose window needs its rows only when it closes:
// window_join (a window's rows of both sides are joined at its close) and
// window_topn (a window's top rows go out at its close). Instead of one
// operator per open window fed as rows arrive (windows.go), each open window
// is a spoolWin: its rows, as the batches route gives it, are kept in a
// bounded cache of Arrow batches in front of one pebble DB the windows
// share. Past the cache's bound (disk.Options.CacheBytes) every window's
// cached batches are written to the DB as Arrow IPC values and released, so
// the hot path stays a Retain per batch, with no per-row pebble call.
//
// Keys are (window end, input, sequence), the end order-preserving
// (windowKeyPrefix): a window's rows are one range, read in the order they
// arrived, input by input, and the windows a watermark closes are the range
// from the first key up to the last one's end, deleted in one range
// deletion. The join key is not in the key: a window's rows are only ever
// read whole, at its close.
//
// When a window closes, its operator (a bounded hash_join or topn, as on the
// memory backend) is opened and replays the window's rows, from the DB (if
// the window was ever written there) and then from the cache, before its end
// of stream: a hash_join past its budget (the cache's bound) spills to
// partitions on disk (join_hash_spill.go), so a window larger than memory
// still closes within it; a topn holds only its top rows per partition.
//
// Its checkpoint ("WSPD") writes every cached batch to the DB and holds the
// watermark, the open windows' ends, the next sequence number and the DB's
// checkpoint manifest: only the files new since the last checkpoint are
// uploaded, off the task's goroutine (exec.AsyncCheckpointed).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	windowSpoolMagic   = "WSPD"
	windowSpoolVersion = 1
	// spoolValueBytes bounds the batches one value holds (by
	// vector.RecordBytes), so that replaying a window reads it in pieces.
	spoolValueBytes = 1 << 20
	// spoolBatchValues is the values a write batch takes before it commits.
	spoolBatchValues = 16
)

// windowOperator is the operator of one open window: the memory backend's bounded
// operator, or a spoolWin on the disk backend.
type windowOperator interface {
	exec.Operator
	exec.Checkpointed
}

// windowSpool is the disk state of a windowed operator whose windows are
// spoolWins: the DB, and the cache of batches not yet written to it.
type windowSpool struct {
	what  string // the operator's kind, for errors
	db    *disk.DB
	opts  disk.Options
	files exec.StateFiles
	mem   memory.Allocator
	limit int64
	// cached holds, by window end and input, the batches not yet in the
	// DB, which take bytes (vector.RecordBytes).
	cached map[int64]*[2][]arrow.RecordBatch
	bytes  int64
	// written are the open windows with rows in the DB.
	written map[int64]bool
	seq     uint64 // of the next value written
	// deleteTo is the end of the last window closed whose keys are not yet
	// deleted; deletes says there is one.
	deleteTo int64
	deletes  bool
	// evictions counts the times the cache was written out, replays the
	// windows closed with rows from the DB (tests read both).
	evictions, replays int
}

// spoolBackend returns the backend a windowed operator's state is on: its
// config's (SET state_backend), else the TaskManager's default.
func spoolBackend(cfg string, tc *exec.TaskContext) string {
	if cfg == "" && tc != nil {
		cfg = tc.StateBackend
	}
	if cfg == StateDisk {
		return StateDisk
	}
	return StateMemory
}

// openSpool opens the disk state of windowed operator what.
func openSpool(what string, tc *exec.TaskContext, mem memory.Allocator) (*windowSpool, error) {
	opts := disk.Options{Dir: spillDir(tc), Memory: tc.StateMemory, Log: tc.Log}
	db, err := disk.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &windowSpool{what: what, db: db, opts: opts, files: tc.StateFiles, mem: mem, limit: opts.CacheBytes(),
		cached: map[int64]*[2][]arrow.RecordBatch{}, written: map[int64]bool{}}, nil
}

// spoolKey is the key of value seq of input of the window ending at end.
func spoolKey(end int64, input int, seq uint64) []byte {
	k := append(windowKeyPrefix(make([]byte, 0, 17), end), byte(input))
	return binary.BigEndian.AppendUint64(k, seq)
}

// add keeps rec, rows of input of the window ending at end, writing the
// cache out once it outgrew its bound.
func (sp *windowSpool) add(end int64, input int, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	c := sp.cached[end]
	if c == nil {
		c = new([2][]arrow.RecordBatch)
		sp.cached[end] = c
	}
	rec.Retain()
	c[input] = append(c[input], rec)
	sp.bytes += vector.RecordBytes(rec)
	if sp.bytes <= sp.limit {
		return nil
	}
	sp.evictions++
	return sp.writeOut()
}

// writeOut writes every cached batch to the DB and empties the cache.
func (sp *windowSpool) writeOut() error {
	b := sp.db.NewBatch()
	n := 0
	for _, end := range slices.Sorted(maps.Keys(sp.cached)) {
		c := sp.cached[end]
		for input, recs := range c {
			for len(recs) > 0 {
				take, size := 0, int64(0)
				for take < len(recs) && (take == 0 || size+vector.RecordBytes(recs[take]) <= spoolValueBytes) {
					size += vector.RecordBytes(recs[take])
					take++
				}
				val, err := state.WriteIPC(sp.mem, recs[0].Schema(), recs[:take]...)
				if err == nil {
					err = b.Set(spoolKey(end, input, sp.seq), val)
				}
				if err != nil {
					return fmt.Errorf("%s: disk state: %w", sp.what, err)
				}
				sp.seq++
				recs = recs[take:]
				if n++; n%spoolBatchValues == 0 {
					if err := b.Commit(); err != nil {
						return fmt.Errorf("%s: disk state: %w", sp.what, err)
					}
					b = sp.db.NewBatch()
				}
			}
		}
		sp.written[end] = true
		sp.release(end)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("%s: disk state: %w", sp.what, err)
	}
	return nil
}

// release drops the cached batches of the window ending at end.
func (sp *windowSpool) release(end int64) {
	c := sp.cached[end]
	if c == nil {
		return
	}
	for _, recs := range c {
		for _, r := range recs {
			sp.bytes -= vector.RecordBytes(r)
			r.Release()
		}
	}
	delete(sp.cached, end)
}

// replay feeds w, the operator of the window ending at end, which closed,
// every row the window kept, the DB's first (they came first).
func (sp *windowSpool) replay(ctx context.Context, end int64, w exec.Operator, out exec.Collector) error {
	if sp.written[end] {
		sp.replays++
		lo := windowKeyPrefix(nil, end)
		err := sp.db.Scan(lo, windowKeyBound(end), func(key, val []byte) error {
			if len(key) != len(lo)+9 {
				return fmt.Errorf("%s: %w: a key of %d bytes", sp.what, state.ErrBadState, len(key))
			}
			_, recs, err := readSpoolValue(sp.what, sp.mem, val)
			if err != nil {
				return err
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			for _, r := range recs {
				if err := w.ProcessBatch(ctx, int(key[len(lo)]), exec.Batch{Rec: r}, out); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if c := sp.cached[end]; c != nil {
		for input, recs := range c {
			for _, r := range recs {
				if err := w.ProcessBatch(ctx, input, exec.Batch{Rec: r}, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readSpoolValue decodes a value of the DB, turning a panic over a damaged
// one into an error.
func readSpoolValue(what string, mem memory.Allocator, val []byte) (_ *arrow.Schema, recs []arrow.RecordBatch, err error) {
	defer state.Recover(what, &err)
	sch, recs, err := state.ReadIPC(mem, val)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %v", what, state.ErrBadState, err)
	}
	return sch, recs, nil
}

// closed forgets the window ending at end, which closed: its cached batches
// go, and its keys are deleted with the others' by deleteClosed.
func (sp *windowSpool) closed(end int64) {
	sp.release(end)
	if sp.written[end] {
		delete(sp.written, end)
		if !sp.deletes || end > sp.deleteTo {
			sp.deleteTo, sp.deletes = end, true
		}
	}
}

// deleteClosed deletes the keys of the windows closed: every key up to the
// last one's (windows close in order of their ends, and a window ending no
// later is closed too).
func (sp *windowSpool) deleteClosed() error {
	if !sp.deletes {
		return nil
	}
	sp.deletes = false
	b := sp.db.NewBatch()
	err := b.DeleteRange(nil, windowKeyBound(sp.deleteTo))
	if err = errors.Join(err, b.Commit()); err != nil {
		return fmt.Errorf("%s: disk state: %w", sp.what, err)
	}
	return nil
}

func (sp *windowSpool) close() {
	for end := range sp.cached {
		sp.release(end)
	}
	sp.db.Close()
}

// spoolWin is the operator of an open window on the disk backend (see the
// top of the file): it keeps the window's rows in its spool until its first
// signal, its end, which opens the window's real operator with open, replays
// the rows into it and passes the signal on; later signals go to it too.
type spoolWin struct {
	sp    *windowSpool
	end   int64
	open  func(ctx context.Context) (exec.Operator, error)
	inner exec.Operator
}

var _ windowOperator = (*spoolWin)(nil)

func (w *spoolWin) Open(context.Context, *exec.TaskContext) error { return nil }

func (w *spoolWin) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if w.inner != nil {
		return w.inner.ProcessBatch(ctx, input, b, out)
	}
	for _, op := range b.Ops {
		if op != exec.Insert {
			return fmt.Errorf("%s: a change other than an insert in an append-only input", w.sp.what)
		}
	}
	return w.sp.add(w.end, input, b.Rec)
}

func (w *spoolWin) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if w.inner == nil {
		inner, err := w.open(ctx)
		if err != nil {
			return err
		}
		w.inner = inner
		if err := w.sp.replay(ctx, w.end, inner, out); err != nil {
			return err
		}
	}
	return w.inner.ProcessSignal(ctx, input, s, out)
}

// Close releases the window's operator and forgets its rows: only a window
// that closed, or the operator's own Close, closes it.
func (w *spoolWin) Close(ctx context.Context) error {
	if w.inner != nil {
		w.inner.Close(ctx)
		w.inner = nil
	}
	w.sp.closed(w.end)
	return nil
}

// SnapshotState is never called: the operator checkpoints its spool whole.
func (w *spoolWin) SnapshotState(context.Context, int64) ([]byte, error) {
	return nil, fmt.Errorf("%s: a window of disk state snapshot alone", w.sp.what)
}

func (w *spoolWin) RestoreState(context.Context, []byte) error {
	return fmt.Errorf("%s: a window of disk state restored alone", w.sp.what)
}

// spoolHeader is the JSON header of a WSPD blob.
type spoolHeader struct {
	Kind    string  `json:"kind"`
	Mark    int64   `json:"mark"`
	Windows []int64 `json:"windows"`
	Seq     uint64  `json:"seq"`
}

// snapshotSpool writes the cache out and starts a checkpoint of the DB, for
// windowed operator s; a final snapshot (checkpoint <= 0, the task's state
// at its end, every window closed) is the memory backend's, the watermark
// alone.
func snapshotSpool(ctx context.Context, sp *windowSpool, s *windowed[windowOperator], checkpoint int64) (exec.PendingState, error) {
	if checkpoint <= 0 {
		if len(s.wins) > 0 {
			return nil, fmt.Errorf("%s: a final snapshot of disk state with %d windows open", sp.what, len(s.wins))
		}
		return donePending(s.snapshot(ctx, checkpoint))
	}
	if err := sp.writeOut(); err != nil {
		return nil, err
	}
	h := spoolHeader{Kind: sp.what, Mark: s.mark, Seq: sp.seq, Windows: slices.Sorted(maps.Keys(s.wins))}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return startDiskSnapshot(sp.what, sp.db, sp.files, checkpoint, windowSpoolMagic, windowSpoolVersion, hdr)
}

// restoreSpool makes sp's DB the checkpoint's and opens s's windows; a
// memory backend's snapshot it takes only with no window open (the
// watermark alone).
func restoreSpool(ctx context.Context, sp *windowSpool, s *windowed[windowOperator], data []byte) error {
	if !isDiskState(data, windowSpoolMagic) {
		var st windowsState
		if err := json.Unmarshal(data, &st); err != nil || len(st.Windows) > 0 {
			return fmt.Errorf("%s: %w: the state is on the memory backend, this operator's on disk; SET state_backend = 'memory'", sp.what, state.ErrBadState)
		}
		s.mark = st.Mark
		return nil
	}
	var h spoolHeader
	m, err := decodeDiskSnapshot(sp.what, windowSpoolMagic, windowSpoolVersion, data, &h)
	if err != nil {
		return err
	}
	if h.Kind != sp.what {
		return fmt.Errorf("%s: %w: the state of a %s", sp.what, state.ErrBadState, h.Kind)
	}
	db, err := disk.Restore(ctx, sp.opts, sp.files, m)
	if err != nil {
		return fmt.Errorf("%s: %w", sp.what, err)
	}
	s.closeAll(ctx)
	sp.db.Close()
	sp.db, sp.seq, s.mark = db, h.Seq, h.Mark
	sp.written, sp.deletes = map[int64]bool{}, false
	for _, e := range h.Windows {
		if _, err := s.window(ctx, e); err != nil {
			return err
		}
		sp.written[e] = true
	}
	return nil
}

// restoreMemory is a memory backend's restore of windowed operator s,
// refusing a disk backend's state.
func restoreMemory(ctx context.Context, s *windowed[windowOperator], data []byte) error {
	if isDiskState(data, windowSpoolMagic) {
		return fmt.Errorf("%s: %w: the state is on the disk backend, this operator's on memory; SET state_backend = 'disk'", s.what, state.ErrBadState)
	}
	return s.restore(ctx, data)
}
