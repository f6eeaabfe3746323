package table

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
// SELECT ... FROM a stream). A keyed table takes the changes as upserts by its
// PRIMARY KEY (a delete removes the key's row); a table without a key takes
// inserts only.
//
// Exactly once, under the job's checkpoints: the changes that arrive before a
// checkpoint's barrier are the sink's state for that checkpoint, and they are
// committed, as one statement, when the checkpoint completes. The version
// that commits them records the checkpoint for the sink (version.Sinks), so
// that a job restored from that checkpoint, which commits them again in case
// the completion came too late, commits them only once. Without checkpoints
// each batch commits on its own.
//
// The sink runs beside the store: in the engine's own TaskManagers (local
// mode, or a cluster in one process), not in TaskManagers of other processes.

// RegisterSink adds the sink of the tables in store to r, and the scans that
// follow their changes as followers registered with store.
func RegisterSink(r *exec.Registry, store *Store) {
	r.RegisterSource(ChangesName, sourceFactory(store))
	r.RegisterSink(Name, func(c exec.ConnectorSpec) (exec.Operator, error) {
		loc, err := parseURL(c.URL)
		if err != nil {
			return nil, err
		}
		return &sink{store: store, id: loc.id, spec: c}, nil
	})
}

type sink struct {
	store *Store
	id    string
	spec  exec.ConnectorSpec
	tc    *exec.TaskContext
	name  string // the sink's name in version.Sinks: its job and subtask

	pending []exec.Batch // changes since the last barrier, retained
	staged  []stagedChanges
}

// stagedChanges are the changes of one checkpoint, waiting for it to complete.
type stagedChanges struct {
	checkpoint int64
	batches    []exec.Batch
}

var (
	_ exec.Operator           = (*sink)(nil)
	_ exec.Checkpointed       = (*sink)(nil)
	_ exec.CheckpointListener = (*sink)(nil)
)

func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	k.tc = tc
	k.name = tc.JobID + ":" + strconv.Itoa(tc.Subtask)
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

// ProcessSignal commits what is pending when the input ends (the job is
// over: no checkpoint follows), and forwards signals.
func (k *sink) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	if s.Kind == exec.EndOfStream && len(k.pending) > 0 {
		err := k.store.applyChanges(k.id, k.constraints(), k.pending, "", 0)
		release(k.pending)
		k.pending = nil
		if err != nil {
			return err
		}
	}
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

// SnapshotState stages the changes before the barrier for the checkpoint
// and returns them (an Arrow IPC stream with their change kinds).
func (k *sink) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	data, err := encodeChanges(k.spec.Schema, checkpoint, k.pending)
	if err != nil {
		return nil, err
	}
	k.staged = append(k.staged, stagedChanges{checkpoint: checkpoint, batches: k.pending})
	k.pending = nil
	return data, nil
}

// NotifyCheckpointComplete commits the changes staged for checkpoints up to
// this one.
func (k *sink) NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error {
	var batches []exec.Batch
	n := 0
	for _, s := range k.staged {
		if s.checkpoint > checkpoint {
			break
		}
		batches = append(batches, s.batches...)
		n++
	}
	if n == 0 {
		return nil
	}
	err := k.store.applyChanges(k.id, k.constraints(), batches, k.name, checkpoint)
	release(batches)
	k.staged = k.staged[n:]
	return err
}

// RestoreState commits the restored checkpoint's changes unless a version
// already did.
func (k *sink) RestoreState(ctx context.Context, data []byte) error {
	checkpoint, batches, err := decodeChanges(data)
	if err != nil {
		return fmt.Errorf("table %s: restoring the sink: %w", k.id, err)
	}
	defer release(batches)
	if done, err := k.store.sinkCommitted(k.id, k.name); err != nil || done >= checkpoint {
		return err
	}
	return k.store.applyChanges(k.id, k.constraints(), batches, k.name, checkpoint)
}

func (k *sink) Close(ctx context.Context) error {
	release(k.pending)
	k.pending = nil
	for _, s := range k.staged {
		release(s.batches)
	}
	k.staged = nil
	return nil
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

// encodeChanges writes the checkpoint and the batches, each with a column of
// its change kinds, as JSON of the checkpoint followed by an Arrow IPC
// stream.
func encodeChanges(schema types.Schema, checkpoint int64, batches []exec.Batch) ([]byte, error) {
	var buf bytes.Buffer
	head, _ := json.Marshal(struct {
		Checkpoint int64        `json:"checkpoint"`
		Schema     types.Schema `json:"schema"`
	}{checkpoint, schema})
	buf.Write(head)
	buf.WriteByte('\n')
	fields := append(schema.Arrow().Fields(), arrow.Field{Name: "$op", Type: arrow.PrimitiveTypes.Int8})
	full := arrow.NewSchema(fields, nil)
	w := ipc.NewWriter(&buf, ipc.WithSchema(full))
	for _, b := range batches {
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
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeChanges(data []byte) (int64, []exec.Batch, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return 0, nil, fmt.Errorf("no header")
	}
	var head struct {
		Checkpoint int64        `json:"checkpoint"`
		Schema     types.Schema `json:"schema"`
	}
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
	return head.Checkpoint, batches, nil
}
