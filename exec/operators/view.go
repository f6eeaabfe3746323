package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// ViewState is the current result of a materialised view: the multiset of rows
// its job's changes add up to. The job's rows arrive through Send (it is the
// job's ResultSink); a query over the view reads a Snapshot. Rows are kept as
// encoded keys (exec/state) with a count each, so any query result, with or
// without a key, is held exactly and retracted by equal rows.
type ViewState struct {
	mu     sync.Mutex
	schema *arrow.Schema
	dts    []arrow.DataType
	table  state.Keyed
	keys   state.RowKeys
	counts []int64
	gids   []uint32
	rows   int64 // sum of counts
	live   int   // keys with a count above zero
	// disk, with the disk state backend, holds the rows; the fields above
	// are then a cache of some of them (view_disk.go).
	disk *viewDisk
}

var _ exec.ResultSink = (*ViewState)(nil)

// NewViewState returns an empty view of rows of schema.
func NewViewState(schema types.Schema) *ViewState {
	v := &ViewState{schema: schema.Arrow(), table: state.NewKeyTable()}
	for _, f := range v.schema.Fields() {
		v.dts = append(v.dts, f.Type)
	}
	return v
}

// Send applies a batch of changes: inserts and update-afters add their rows,
// deletes and update-befores remove one equal row each. A retraction of a row
// the view does not hold is an error (the job's changes are inconsistent).
func (v *ViewState) Send(_ context.Context, _ string, b exec.Batch) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	rec := b.Rec
	if !rec.Schema().Equal(v.schema) {
		return fmt.Errorf("view: rows of schema %s, want %s", rec.Schema(), v.schema)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.keys.Encode(rec.Columns(), nil, n); err != nil {
		return err
	}
	first := v.table.Len()
	v.gids = vector.GrowSlice(v.gids, n)
	v.table.InsertRows(&v.keys, v.gids)
	v.counts = vector.GrowZero(v.counts, v.table.Len())
	if v.disk != nil {
		if err := v.loadCounts(first, v.gids); err != nil {
			return err
		}
	}
	for i, g := range v.gids {
		switch b.Op(i) {
		case exec.Insert, exec.UpdateAfter:
			v.counts[g]++
			v.rows++
			if v.counts[g] == 1 {
				v.live++
			}
		default:
			if v.counts[g] == 0 {
				return fmt.Errorf("view: the job retracted a row the view does not hold")
			}
			v.counts[g]--
			v.rows--
			if v.counts[g] == 0 {
				v.live--
			}
		}
	}
	if v.disk != nil {
		return v.evictIfFull()
	}
	if dead := v.table.Len() - v.live; dead > 4096 && dead > 2*v.live {
		return v.compact()
	}
	return nil
}

// compact rebuilds the key table with the live rows only, so a view whose rows
// keep changing does not keep every row it ever held.
func (v *ViewState) compact() error {
	ids := v.liveIDs()
	cols, err := v.table.DecodeKeys(memory.DefaultAllocator, v.dts, state.GroupIDs(ids))
	if err != nil {
		return err
	}
	defer vector.ReleaseArrays(cols)
	counts := make([]int64, len(ids))
	for i, g := range ids {
		counts[i] = v.counts[g]
	}
	v.table = state.NewKeyTable()
	v.keys = state.RowKeys{}
	v.counts = counts
	if len(ids) == 0 {
		return nil
	}
	if err := v.keys.Encode(cols, nil, len(ids)); err != nil {
		return err
	}
	v.gids = vector.GrowSlice(v.gids, len(ids))
	v.table.InsertRows(&v.keys, v.gids)
	v.keys = state.RowKeys{} // it aliases cols, released on return
	return nil
}

func (v *ViewState) liveIDs() []uint32 {
	ids := make([]uint32, 0, v.live)
	for g, c := range v.counts {
		if c > 0 {
			ids = append(ids, uint32(g))
		}
	}
	return ids
}

// Rows returns the number of rows the view holds.
func (v *ViewState) Rows() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rows
}

// Snapshot returns the view's rows now, as an Arrow IPC stream (the form a
// "snapshot" source reads; see SnapshotConfig). A row held n times appears n
// times.
func (v *ViewState) Snapshot() ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(v.schema))
	var err error
	if v.disk != nil {
		err = v.scanDisk(func(t state.Keyed, counts []int64) error {
			return writeRows(w, v.schema, v.dts, t, replicate(allIDs(len(counts)), counts))
		})
	} else {
		err = writeRows(w, v.schema, v.dts, v.table, replicate(v.liveIDs(), v.counts))
	}
	if err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// snapshotSource is the source of kind "snapshot" (SnapshotConfig): rows
// captured when the query was planned, a materialised view's contents, emitted
// once by subtask 0.
type snapshotSource struct {
	cfg  SnapshotConfig
	data []byte // the spec's Data
	out  *arrow.Schema
	tc   *exec.TaskContext
}

var _ exec.Source = (*snapshotSource)(nil)

func newSnapshotSource(spec exec.OperatorSpec) (*snapshotSource, error) {
	s := &snapshotSource{out: spec.Out.Arrow(), data: spec.Data}
	if err := json.Unmarshal(spec.Config, &s.cfg); err != nil {
		return nil, fmt.Errorf("exec: snapshot config: %w", err)
	}
	return s, nil
}

func (s *snapshotSource) Open(_ context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	return nil
}

// Run emits the snapshot's records, projected to Columns and named as the
// view's columns (which a column list in CREATE VIEW may rename).
func (s *snapshotSource) Run(ctx context.Context, out exec.Collector) error {
	if s.tc.Subtask != 0 {
		return nil
	}
	r, err := ipc.NewReader(bytes.NewReader(s.data), ipc.WithAllocator(vector.TaskAlloc(s.tc)))
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer r.Release()
	for r.Next() {
		in := r.RecordBatch()
		cols := in.Columns()
		if s.cfg.Columns != nil {
			cols = make([]arrow.Array, len(s.cfg.Columns))
			for i, c := range s.cfg.Columns {
				if c < 0 || c >= int(in.NumCols()) {
					return fmt.Errorf("snapshot: column %d out of range", c)
				}
				cols[i] = in.Column(c)
			}
		}
		for _, c := range cols {
			c.Retain() // vector.MakeRecord takes over a reference
		}
		rec, err := vector.MakeRecord(s.out, cols, int(in.NumRows()))
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		err = out.Collect(ctx, exec.Batch{Rec: rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return r.Err()
}

func (s *snapshotSource) Close() error { return nil }

// viewOp is kind "view", the sink of a materialised view's job: it keeps the
// view's rows (a ViewState) inside the dataflow, where checkpoints take them
// with every other operator's state, and the engine reads them through the
// job's deployment (Deployment.ReadView). It runs as one instance.
type viewOp struct {
	cfg   ViewConfig
	state *ViewState
	ready atomic.Bool // caught up: read by ReadView on another goroutine
	ended bool        // its input ended: the rows are final
}

var (
	_ exec.Operator     = (*viewOp)(nil)
	_ exec.Checkpointed = (*viewOp)(nil)
	_ exec.ViewReader   = (*viewOp)(nil)
)

func newViewOp(spec exec.OperatorSpec) (exec.Operator, error) {
	o := &viewOp{state: NewViewState(spec.Out)}
	if len(spec.Config) > 0 {
		if err := json.Unmarshal(spec.Config, &o.cfg); err != nil {
			return nil, fmt.Errorf("view: config: %w", err)
		}
	}
	return o, nil
}

// ReadView returns the view's current rows (ViewState.Snapshot), once it has
// caught up with its inputs (or at once with now).
func (o *viewOp) ReadView(now bool) ([]byte, error) {
	if !now && !o.ready.Load() {
		return nil, exec.ErrViewNotReady
	}
	return o.state.Snapshot()
}

func (o *viewOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	if tc.Parallelism != 1 {
		return fmt.Errorf("view: runs as one instance, not %d", tc.Parallelism)
	}
	backend := o.cfg.StateBackend
	if backend == "" {
		backend = tc.StateBackend
	}
	if backend == StateDisk {
		return o.state.openDisk(tc)
	}
	return nil
}

func (o *viewOp) ProcessBatch(ctx context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	return o.state.Send(ctx, "", b)
}

// ProcessSignal marks the view caught up at the end of its input, or at the
// first checkpoint's barrier: what came before is in the view.
func (o *viewOp) ProcessSignal(_ context.Context, _ int, s exec.Signal, _ exec.Collector) error {
	if s.Kind == exec.EndOfStream || s.Kind == exec.Barrier {
		o.ready.Store(true)
	}
	o.ended = o.ended || s.Kind == exec.EndOfStream
	return nil
}

// Close closes a disk-backed view's DB, unless the view's input ended: then
// the queries over it go on reading it.
func (o *viewOp) Close(context.Context) error {
	if o.ended {
		o.keepOpenAfterEnd()
		return nil
	}
	o.state.closeDisk()
	return nil
}

// SnapshotState takes the view's rows: a disk-backed view's DB checkpoint
// (finished here), or at checkpoint 0, the state its task ends with, its
// rows whole.
func (o *viewOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	p, err := o.SnapshotStateAsync(ctx, checkpoint)
	return finishNow(ctx, p, err)
}

// RestoreState restores a checkpoint's rows: the view is as caught up as it was
// then.
func (o *viewOp) RestoreState(ctx context.Context, data []byte) error {
	restore := o.state.RestoreState
	if isDiskState(data, viewDiskMagic) {
		restore = func(data []byte) error { return o.state.restoreDisk(ctx, data) }
	}
	if err := restore(data); err != nil {
		return err
	}
	o.ready.Store(true)
	return nil
}
