package table

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// The table sink: a continuous job writing into a stored table (INSERT INTO t
// SELECT ... FROM a stream, or a job's late_rows_table). A keyed table takes
// the changes as upserts by its PRIMARY KEY (a delete removes the key's row);
// a table without a key takes inserts only.
//
// Exactly once, under the job's checkpoints. The changes that arrive between
// two barriers are an interval, named by the checkpoint whose barrier ends
// it. The sink's state in checkpoint n holds every interval up to n that the
// sink has not heard committed: not only n's, since a checkpoint that failed
// (declined, timed out) leaves its interval to the next one. Committing the
// intervals of a state is one statement per sink subtask, whose version
// records n for the sink (version.Sinks, under the sink's name: SinkURL's
// run, or without one the job's id, and the subtask); a commit applies only the intervals after the checkpoint the
// table records for the sink, so committing a state again, or a later state
// that still holds committed intervals, changes nothing. A task's final
// state, as its input ends, names its last interval finalCheckpoint, after
// every checkpoint, which a commit records: the end is committed once.
//
// Who commits depends on where the sink runs:
//
//   - Beside the store (hummer serve: the engine's own TaskManagers, in its
//     process), the sink commits its intervals up to n when it hears that
//     checkpoint n is complete, and when restored from checkpoint n commits
//     what that state holds (in case the completion came too late); as its
//     input ends it commits the rest.
//   - In a TaskManager of another process (a cluster of hummer jobmanager and
//     hummer taskmanager processes), which has no store, the sink only stages:
//     its state is in the checkpoint store, which the JobManager reaches, and
//     the JobManager's process, which holds the store, commits it
//     (CommitStaged, through jobmanager.JobManager.CommitSinks): when
//     checkpoint n is complete, before the tasks hear so; before an attempt
//     restored from n is deployed; and a sink task's final state once the
//     checkpoint after its end, or the job, is complete. The sink drops its
//     intervals up to n when it hears n complete, which the JobManager tells
//     only once the commit succeeded; a commit that failed is left to the
//     next checkpoint, whose state still holds those intervals.
//
// Without checkpoints the sink beside the store commits each batch on its
// own; the staging sink refuses to run without them.

// finalCheckpoint names the interval a task's final state ends with: after
// every checkpoint, so that committing it records the sink as done.
const finalCheckpoint = math.MaxInt64

// RegisterSink adds the sink of the tables in store to r, and the scans that
// follow their changes as followers registered with store.
func RegisterSink(r *exec.Registry, store *Store) {
	r.RegisterSource(ChangesName, sourceFactory(store))
	r.RegisterSink(Name, sinkFactory(store))
}

// sinkFactory makes the sinks writing into store's tables, or with store nil
// the staging sink of a TaskManager without the store.
func sinkFactory(store *Store) exec.SinkFactory {
	return func(c exec.ConnectorSpec) (exec.Operator, error) {
		loc, err := parseURL(c.URL)
		if err != nil {
			return nil, err
		}
		return &sink{store: store, id: loc.id, run: loc.sink, spec: c}, nil
	}
}

type sink struct {
	store *Store // nil: the staging sink, whose states the JobManager commits
	id    string
	run   string // SinkURL's run, "" for a URL without one
	spec  exec.ConnectorSpec
	tc    *exec.TaskContext
	name  string // the sink's name in version.Sinks (sinkName)

	pending []exec.Batch // changes since the last barrier, retained
	staged  []interval   // intervals not yet known committed, oldest first
}

// interval is the changes between two barriers, named by the checkpoint of
// the later one.
type interval struct {
	checkpoint int64
	batches    []exec.Batch
}

var (
	_ exec.Operator           = (*sink)(nil)
	_ exec.Checkpointed       = (*sink)(nil)
	_ exec.CheckpointListener = (*sink)(nil)
)

// SinkURL is the URL of table id as the sink of one job writes it: run
// names the job's sink in the table's record of committed checkpoints
// (version.Sinks), and must be unique to the job, not merely its id, which
// a later job may take again (the ids of jobs that ended before a restart
// are given anew) and then have its commits taken for ones already done.
// The statement that starts the job picks it; the job's graph keeps it
// across restarts.
func SinkURL(id, run string) string { return URL(id) + "?sink=" + url.QueryEscape(run) }

// sinkName is the name under which subtask of a sink commits into a table
// (version.Sinks): its URL's run (SinkURL), or the job's id for a URL
// without one.
func sinkName(run, job string, subtask int) string {
	if run == "" {
		run = job
	}
	return run + ":" + strconv.Itoa(subtask)
}

func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	k.tc = tc
	k.name = sinkName(k.run, tc.JobID, tc.Subtask)
	if k.store == nil {
		if !tc.Checkpointing {
			return fmt.Errorf("table %s: a continuous job on TaskManagers without the table's store writes into it only under checkpoints (SET checkpoint_interval)", k.id)
		}
		return nil
	}
	_, err := k.store.table(k.id)
	return err
}

func (k *sink) constraints() Constraints {
	return Constraints{Table: k.id, Schema: k.spec.Schema, Key: k.spec.Key}
}

func (k *sink) ProcessBatch(ctx context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	if !k.tc.Checkpointing {
		return k.store.applyChanges(k.id, k.constraints(), []exec.Batch{b}, "", 0)
	}
	b.Rec.Retain()
	if b.Ops != nil {
		b.Ops = append([]exec.ChangeKind(nil), b.Ops...)
	}
	k.pending = append(k.pending, b)
	return nil
}

// ProcessSignal, beside the store, commits what is uncommitted when the input
// ends (the job is over: no checkpoint follows), and forwards signals. The
// staging sink keeps it for its final state.
func (k *sink) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	if s.Kind == exec.EndOfStream && k.store != nil && k.tc.Checkpointing {
		k.stage(finalCheckpoint)
		err := k.store.commitIntervals(k.id, k.constraints(), k.name, finalCheckpoint, k.staged)
		k.drop(finalCheckpoint)
		if err != nil {
			return err
		}
	}
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

// stage closes the pending interval as checkpoint's.
func (k *sink) stage(checkpoint int64) {
	if len(k.pending) > 0 {
		k.staged = append(k.staged, interval{checkpoint: checkpoint, batches: k.pending})
	}
	k.pending = nil
}

// drop releases the intervals up to checkpoint.
func (k *sink) drop(checkpoint int64) {
	n := 0
	for n < len(k.staged) && k.staged[n].checkpoint <= checkpoint {
		release(k.staged[n].batches)
		n++
	}
	k.staged = k.staged[n:]
}

// SnapshotState closes the interval before the barrier and returns every
// interval not yet known committed; checkpoint 0, the task's final state,
// names the last one finalCheckpoint.
func (k *sink) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if checkpoint == 0 {
		checkpoint = finalCheckpoint
	}
	k.stage(checkpoint)
	return encodeChanges(k.spec.Schema, checkpoint, k.staged)
}

// NotifyCheckpointComplete, beside the store, commits the intervals up to
// checkpoint; either sink then drops them (the staging sink's were committed
// by the JobManager before it told).
func (k *sink) NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error {
	var err error
	if k.store != nil {
		err = k.store.commitIntervals(k.id, k.constraints(), k.name, checkpoint, k.upTo(checkpoint))
	}
	k.drop(checkpoint)
	return err
}

// upTo returns the staged intervals up to checkpoint.
func (k *sink) upTo(checkpoint int64) []interval {
	n := 0
	for n < len(k.staged) && k.staged[n].checkpoint <= checkpoint {
		n++
	}
	return k.staged[:n]
}

// RestoreState, beside the store, commits what the restored state holds
// that the table does not. The staging sink's was committed by the
// JobManager before the attempt was deployed.
func (k *sink) RestoreState(ctx context.Context, data []byte) error {
	if k.store == nil {
		return nil
	}
	if err := k.store.CommitStaged(k.id, k.constraints(), k.name, data); err != nil {
		return fmt.Errorf("table %s: restoring the sink: %w", k.id, err)
	}
	return nil
}

func (k *sink) Close(ctx context.Context) error {
	release(k.pending)
	k.pending = nil
	k.drop(finalCheckpoint)
	return nil
}

// CommitSink commits the state of subtask of job's sink c (a staging sink's,
// as the JobManager reads it from the checkpoint store): CommitStaged into
// the table c names.
func (s *Store) CommitSink(c exec.ConnectorSpec, job string, subtask int, state []byte) error {
	loc, err := parseURL(c.URL)
	if err != nil {
		return err
	}
	return s.CommitStaged(loc.id, Constraints{Table: loc.id, Schema: c.Schema, Key: c.Key}, sinkName(loc.sink, job, subtask), state)
}

// CommitStaged commits into table id, for the sink named name (sinkName),
// the intervals of a sink's state (what SnapshotState returned) that the
// table has not committed for that sink: the JobManager's commit of a
// staging sink's state, and a restored sink's beside the store. Committing
// the same state again changes nothing.
func (s *Store) CommitStaged(id string, c Constraints, name string, data []byte) error {
	checkpoint, intervals, err := decodeChanges(data)
	if err != nil {
		return err
	}
	defer func() {
		for _, iv := range intervals {
			release(iv.batches)
		}
	}()
	return s.commitIntervals(id, c, name, checkpoint, intervals)
}

// commitIntervals commits, as one statement recording checkpoint for sink
// name, the intervals after the checkpoint the table last recorded for it.
func (s *Store) commitIntervals(id string, c Constraints, name string, checkpoint int64, intervals []interval) error {
	done, err := s.sinkCommitted(id, name)
	if err != nil || done >= checkpoint {
		return err
	}
	var batches []exec.Batch
	for _, iv := range intervals {
		if iv.checkpoint > done {
			batches = append(batches, iv.batches...)
		}
	}
	if len(batches) == 0 {
		return nil
	}
	return s.applyChanges(id, c, batches, name, checkpoint)
}

func release(bs []exec.Batch) {
	for _, b := range bs {
		b.Rec.Release()
	}
}

// sinkCommitted returns the last checkpoint a version committed for sink
// name in table id.
func (s *Store) sinkCommitted(id, name string) (int64, error) {
	t, err := s.table(id)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current.Sinks[name], nil
}

// applyChanges commits changes to table id as one statement, recording
// checkpoint for sink name in the version (none with name ""). Inserts of
// keys the table does not hold are appended; otherwise the table is
// rewritten: each key's last change wins, a delete removes the key. A table
// without a key takes inserts only.
func (s *Store) applyChanges(id string, c Constraints, changes []exec.Batch, name string, checkpoint int64) error {
	tx, err := s.Begin(id, c)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if name != "" {
		tx.sinkName, tx.sinkCheckpoint = name, checkpoint
	}
	if len(c.Key) == 0 || !s.touchesRows(tx, changes) {
		for _, b := range changes {
			for i := 0; i < b.NumRows(); i++ {
				if op := b.Op(i); op != exec.Insert && op != exec.UpdateAfter {
					return fmt.Errorf("table %s: a delete for a table without a PRIMARY KEY", c.Table)
				}
			}
			if err := tx.Append(b.Rec); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
	tx.Change()
	if err := s.upsert(tx, changes); err != nil {
		return err
	}
	return tx.Commit()
}

// touchesRows reports whether changes delete or update a key: a delete of
// any key, or an insert of a key the table or an earlier change holds.
func (s *Store) touchesRows(tx *Tx, changes []exec.Batch) bool {
	existing, err := s.keysOf(tx.t, tx.c)
	if err != nil {
		return true
	}
	seen := map[string]bool{}
	var buf []byte
	for _, b := range changes {
		for i := 0; i < b.NumRows(); i++ {
			if op := b.Op(i); op != exec.Insert && op != exec.UpdateAfter {
				return true
			}
			buf = appendKey(buf[:0], b.Rec, tx.c.Key, i)
			if _, ok := existing[string(buf)]; ok || seen[string(buf)] {
				return true
			}
			seen[string(buf)] = true
		}
	}
	return false
}

// upsert changes in tx (Change) the rows of the keys the changes touch: it
// deletes their current rows and appends each touched key's last inserted
// row. Only the segments holding a touched key are rewritten.
func (s *Store) upsert(tx *Tx, changes []exec.Batch) error {
	t := tx.t
	t.mu.Lock()
	cur := t.current
	t.mu.Unlock()
	// The last change of each key: the batch and row of its new row, or -1
	// for a delete.
	type loc struct{ batch, row int }
	last := map[string]loc{}
	var buf []byte
	for bi, b := range changes {
		for i := 0; i < b.NumRows(); i++ {
			buf = appendKey(buf[:0], b.Rec, tx.c.Key, i)
			switch b.Op(i) {
			case exec.Insert, exec.UpdateAfter:
				last[string(buf)] = loc{bi, i}
			default:
				last[string(buf)] = loc{-1, -1}
			}
		}
	}
	mem := memory.DefaultAllocator
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	err := t.scanRowIDs(cur, mem, func(rec arrow.RecordBatch, first int64) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			buf = appendKey(buf[:0], rec, tx.c.Key, i)
			if _, touched := last[string(buf)]; touched {
				ids.Append(first + int64(i))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	gone := ids.NewInt64Array()
	defer gone.Release()
	if err := tx.Delete(gone); err != nil {
		return err
	}
	for bi, b := range changes {
		var keep []int32
		for i := 0; i < b.NumRows(); i++ {
			buf = appendKey(buf[:0], b.Rec, tx.c.Key, i)
			if l := last[string(buf)]; l.batch == bi && l.row == i {
				keep = append(keep, int32(i))
			}
		}
		if err := appendGathered(tx, b.Rec, keep, mem); err != nil {
			return err
		}
	}
	return nil
}

func appendGathered(tx *Tx, rec arrow.RecordBatch, idx []int32, mem memory.Allocator) error {
	if len(idx) == 0 {
		return nil
	}
	if len(idx) == int(rec.NumRows()) {
		return tx.Append(rec)
	}
	g, err := vector.GatherRecord(mem, rec, idx)
	if err != nil {
		return err
	}
	defer g.Release()
	return tx.Append(g)
}

// encodeChanges writes a sink's state: a line of JSON (its checkpoint, the
// schema and each interval's checkpoint and number of batches), then the
// intervals' batches, each with a column of its change kinds, as one Arrow
// IPC stream.
func encodeChanges(schema types.Schema, checkpoint int64, intervals []interval) ([]byte, error) {
	var buf bytes.Buffer
	head := changesHead{Checkpoint: checkpoint, Schema: schema}
	for _, iv := range intervals {
		head.Intervals = append(head.Intervals, intervalHead{Checkpoint: iv.checkpoint, Batches: len(iv.batches)})
	}
	line, _ := json.Marshal(head)
	buf.Write(line)
	buf.WriteByte('\n')
	fields := append(schema.Arrow().Fields(), arrow.Field{Name: "$op", Type: arrow.PrimitiveTypes.Int8})
	full := arrow.NewSchema(fields, nil)
	w := ipc.NewWriter(&buf, ipc.WithSchema(full))
	for _, iv := range intervals {
		for _, b := range iv.batches {
			ob := array.NewInt8Builder(memory.DefaultAllocator)
			for i := 0; i < b.NumRows(); i++ {
				ob.Append(int8(b.Op(i)))
			}
			ops := ob.NewArray()
			ob.Release()
			rec := array.NewRecordBatch(full, append(append([]arrow.Array{}, b.Rec.Columns()...), ops), b.Rec.NumRows())
			ops.Release()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				w.Close()
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// changesHead is the JSON line a sink's state starts with. A state written
// before intervals were kept has none: its batches are one interval, its
// checkpoint's.
type changesHead struct {
	Checkpoint int64          `json:"checkpoint"`
	Schema     types.Schema   `json:"schema"`
	Intervals  []intervalHead `json:"intervals,omitempty"`
}

type intervalHead struct {
	Checkpoint int64 `json:"checkpoint"`
	Batches    int   `json:"batches"`
}

func decodeChanges(data []byte) (int64, []interval, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return 0, nil, fmt.Errorf("no header")
	}
	var head changesHead
	if err := json.Unmarshal(data[:nl], &head); err != nil {
		return 0, nil, err
	}
	r, err := ipc.NewReader(bytes.NewReader(data[nl+1:]))
	if err != nil {
		return 0, nil, err
	}
	defer r.Release()
	out := head.Schema.Arrow()
	var batches []exec.Batch
	for r.Next() {
		rec := r.RecordBatch()
		n := int(rec.NumCols()) - 1
		opsArr := rec.Column(n).(*array.Int8)
		ops := make([]exec.ChangeKind, rec.NumRows())
		for i := range ops {
			ops[i] = exec.ChangeKind(opsArr.Value(i))
		}
		batches = append(batches, exec.Batch{Rec: array.NewRecordBatch(out, rec.Columns()[:n], rec.NumRows()), Ops: ops})
	}
	if err := r.Err(); err != nil {
		release(batches)
		return 0, nil, err
	}
	if head.Intervals == nil {
		return head.Checkpoint, []interval{{checkpoint: head.Checkpoint, batches: batches}}, nil
	}
	var intervals []interval
	rest := batches
	for _, ih := range head.Intervals {
		if ih.Batches < 0 || ih.Batches > len(rest) {
			release(batches)
			return 0, nil, fmt.Errorf("intervals of %d batches in all, the stream holds %d", ih.Batches, len(batches))
		}
		intervals = append(intervals, interval{checkpoint: ih.Checkpoint, batches: rest[:ih.Batches:ih.Batches]})
		rest = rest[ih.Batches:]
	}
	if len(rest) > 0 {
		release(batches)
		return 0, nil, fmt.Errorf("%d batches past the intervals", len(rest))
	}
	return head.Checkpoint, intervals, nil
}
