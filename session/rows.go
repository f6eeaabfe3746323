package session

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// jobRows streams the result of a query job to the client. It is the job's
// ResultSink: the "result" tasks Send batches into a small queue that Next
// drains, so a slow client backpressures the job.
type jobRows struct {
	schema types.Schema
	ch     chan rowsItem
	jm     *jobmanager.JobManager
	job    *jobmanager.Job
	once   sync.Once
	enc    atomic.Pointer[RowEncoder] // set by EncodeWith
	last   []byte                     // NextEncoded's last data, recycled by the next call
	// producers is how many result tasks send rows. With several, each encodes
	// its own once EncodeWith is called, in parallel. With one, EncodeWith
	// declines: the reader's goroutine then encodes while the task goes on
	// producing, a pipeline over two cores (SELECT line FROM 10 copies of
	// kjv.txt, 1M lines, took 116-149 ms so and 183-300 ms with the task
	// encoding too, 3 runs each). Zero until start: the tasks may send before.
	producers atomic.Int32
	// queued counts the bytes of the items in ch: Send waits while they are
	// over maxQueuedBytes, so that a client that stops reading holds that
	// much of its result, not QueueCapacity batches of any size (a join's
	// of 65,536 wide rows pinned 845 MB). space wakes a waiting Send when
	// next takes an item.
	queued atomic.Int64
	space  chan struct{}
}

// maxQueuedBytes bounds what a result holds for its client (jobRows.queued);
// a batch larger than it still goes, alone.
const maxQueuedBytes = 16 << 20

// size is the memory the item holds: its record's buffers or its encoding.
func (it rowsItem) size() int64 {
	if it.b.Rec == nil {
		return int64(len(it.data))
	}
	return vector.RecordBytes(it.b.Rec)
}

// rowsItem is one batch in a jobRows' queue, as sent or, once the client's
// encoder is known, encoded by the sender.
type rowsItem struct {
	b    exec.Batch // nil Rec when encoded
	data []byte     // the encoded rows
	rows int64
}

func (it rowsItem) release() {
	if it.b.Rec != nil {
		it.b.Rec.Release()
	}
	putEncoded(it.data)
}

// encodedBufs recycles the buffers of encoded rows: a result of 58,733 words is
// about 1.2 MB of them.
var encodedBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledEncoded bounds the buffers kept for reuse, so that one huge batch does
// not stay pinned.
const maxPooledEncoded = 4 << 20

func getEncoded() []byte { return (*encodedBufs.Get().(*[]byte))[:0] }

func putEncoded(b []byte) {
	if b != nil && cap(b) <= maxPooledEncoded {
		encodedBufs.Put(&b)
	}
}

var (
	_ Rows            = (*jobRows)(nil)
	_ EncodingRows    = (*jobRows)(nil)
	_ ChangeRows      = (*jobRows)(nil)
	_ exec.ResultSink = (*jobRows)(nil)
)

// ChangeRows is implemented by Rows whose batches may carry change kinds: the
// changes of a continuous query, which COPY TO STDOUT streams with their kinds.
type ChangeRows interface {
	// NextChanges is Next with the batch's change kinds (nil: all inserts).
	NextChanges(ctx context.Context) (exec.Batch, error)
}

func newJobRows(schema types.Schema) *jobRows {
	return &jobRows{schema: schema, ch: make(chan rowsItem, exec.QueueCapacity), space: make(chan struct{}, 1)}
}

// start ties the rows to their job: the queue closes once every task has
// stopped, after the last Send.
func (r *jobRows) start(jm *jobmanager.JobManager, job *jobmanager.Job) {
	r.jm, r.job = jm, job
	r.producers.Store(int32(resultTasks(job.Graph)))
	go func() {
		<-job.Done()
		close(r.ch)
	}()
}

// lateNotices tells, per source of the job that skipped bad rows, how many
// and the first (LateNotices).
func (r *jobRows) lateNotices() []string {
	if r.job == nil {
		return nil
	}
	metrics := r.job.Metrics()
	ids := make([]exec.TaskID, 0, len(metrics))
	for id := range metrics {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		return ids[a].Vertex < ids[b].Vertex || ids[a].Vertex == ids[b].Vertex && ids[a].Subtask < ids[b].Subtask
	})
	type skipped struct {
		n     int64
		first string
	}
	var order []int
	by := map[int]*skipped{} // by vertex
	for _, id := range ids {
		m := metrics[id]
		n := m.BadRecords.Load()
		if n == 0 {
			continue
		}
		s := by[id.Vertex]
		if s == nil {
			s = &skipped{}
			by[id.Vertex] = s
			order = append(order, id.Vertex)
		}
		s.n += n
		if s.first == "" {
			s.first = m.FirstBadRecord()
		}
	}
	var out []string
	for _, v := range order {
		s := by[v]
		rows := "rows"
		if s.n == 1 {
			rows = "row"
		}
		out = append(out, fmt.Sprintf("%d bad %s skipped (bad_rows=skip); the first: %s", s.n, rows, s.first))
	}
	return out
}

// resultTasks returns how many tasks of g send rows to the client.
func resultTasks(g *exec.ExecutionGraph) int {
	if g == nil || g.Job == nil {
		return 1
	}
	n := 0
	for _, v := range g.Job.Vertices {
		if k := len(v.Chain); k > 0 && v.Chain[k-1].Kind == "result" {
			for _, t := range g.Tasks {
				if t.ID.Vertex == v.ID {
					n++
				}
			}
		}
	}
	return max(n, 1)
}

// Send implements exec.ResultSink. Once EncodeWith took the client's encoder,
// the rows are encoded here, in the task that sends them.
func (r *jobRows) Send(ctx context.Context, _ string, b exec.Batch) error {
	var it rowsItem
	if enc := r.enc.Load(); enc != nil && insertsOnly(b) {
		data, err := encodeRows(*enc, b.Rec)
		if err != nil {
			return err
		}
		it = rowsItem{data: data, rows: int64(b.NumRows())}
	} else {
		b.Rec.Retain()
		it = rowsItem{b: b}
	}
	size := it.size()
	for q := r.queued.Load(); q > 0 && q+size > maxQueuedBytes; q = r.queued.Load() {
		select {
		case <-r.space:
		case <-ctx.Done():
			it.release()
			return context.Cause(ctx)
		}
	}
	r.queued.Add(size)
	select {
	case r.ch <- it:
		return nil
	case <-ctx.Done():
		r.queued.Add(-size)
		it.release()
		return context.Cause(ctx)
	}
}

// encodeRows encodes rec's rows with enc into a buffer from encodedBufs, which
// goes back to it if enc fails.
func encodeRows(enc RowEncoder, rec arrow.RecordBatch) ([]byte, error) {
	data, err := enc(getEncoded(), rec)
	if err != nil {
		putEncoded(data)
		return nil, err
	}
	return data, nil
}

func insertsOnly(b exec.Batch) bool {
	for _, op := range b.Ops {
		if op != exec.Insert {
			return false
		}
	}
	return true
}

func (r *jobRows) Schema() types.Schema { return r.schema }

// Next returns the next batch of rows; a batch with retractions is an error
// (a SELECT's result only grows: the planner gives continuous queries, whose
// results change, to views, sinks and COPY).
func (r *jobRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.NextChanges(ctx)
	if err != nil {
		return nil, err
	}
	return insertsOf(b)
}

// insertsOf returns b's rows, or an error (releasing b) if some retract.
func insertsOf(b exec.Batch) (arrow.RecordBatch, error) {
	if !insertsOnly(b) {
		b.Rec.Release()
		return nil, fmt.Errorf("session: a query result cannot retract rows; use a materialised view")
	}
	return b.Rec, nil
}

func (r *jobRows) NextChanges(ctx context.Context) (exec.Batch, error) {
	it, err := r.next(ctx)
	if err != nil {
		return exec.Batch{}, err
	}
	if it.b.Rec == nil { // encoded: only after EncodeWith, which excludes this
		putEncoded(it.data)
		return exec.Batch{}, fmt.Errorf("session: rows already encoded for the client")
	}
	return it.b, nil
}

// pollChanges is NextChanges without waiting: errNotYet when no batch is
// queued (a cursor over a stream, cursor.go).
func (r *jobRows) pollChanges() (exec.Batch, error) {
	select {
	case it, ok := <-r.ch:
		it, err := r.took(it, ok)
		if err != nil {
			return exec.Batch{}, err
		}
		if it.b.Rec == nil {
			putEncoded(it.data)
			return exec.Batch{}, fmt.Errorf("session: rows already encoded for the client")
		}
		return it.b, nil
	default:
		return exec.Batch{}, errNotYet
	}
}

func (r *jobRows) next(ctx context.Context) (rowsItem, error) {
	select {
	case it, ok := <-r.ch:
		return r.took(it, ok)
	case <-ctx.Done():
		return rowsItem{}, context.Cause(ctx)
	}
}

// took accounts for an item received from ch (ok false: ch is closed).
func (r *jobRows) took(it rowsItem, ok bool) (rowsItem, error) {
	if !ok {
		if err := r.job.Err(); err != nil {
			return rowsItem{}, err
		}
		return rowsItem{}, io.EOF
	}
	r.queued.Add(-it.size())
	select {
	case r.space <- struct{}{}:
	default: // a wake-up is pending already
	}
	return it, nil
}

// EncodeWith implements EncodingRows.
func (r *jobRows) EncodeWith(enc RowEncoder) bool {
	if r.producers.Load() <= 1 {
		return false
	}
	r.enc.Store(&enc)
	return true
}

// NextEncoded implements EncodingRows.
func (r *jobRows) NextEncoded(ctx context.Context) ([]byte, int64, error) {
	putEncoded(r.last)
	r.last = nil
	it, err := r.next(ctx)
	if err != nil {
		return nil, 0, err
	}
	if it.b.Rec != nil { // sent before EncodeWith
		enc := r.enc.Load()
		if enc == nil {
			it.release()
			return nil, 0, fmt.Errorf("session: NextEncoded before EncodeWith")
		}
		rec, err := insertsOf(it.b)
		if err != nil {
			return nil, 0, err
		}
		it.data, err = encodeRows(*enc, rec)
		it.rows = rec.NumRows()
		rec.Release()
		if err != nil {
			return nil, 0, err
		}
	}
	r.last = it.data
	return it.data, it.rows, nil
}

// Close cancels the job if it still runs, releases what it queued and forgets it.
func (r *jobRows) Close() {
	r.once.Do(func() {
		r.job.Cancel(fmt.Errorf("%w: result closed", exec.ErrJobCancelled))
		for it := range r.ch {
			it.release()
		}
		putEncoded(r.last)
		r.last = nil
		r.jm.Forget(r.job.ID)
	})
}

// staticRows answers with one record computed by the session itself.
type staticRows struct {
	schema types.Schema
	rec    arrow.RecordBatch
}

func newStaticRows(schema types.Schema, rec arrow.RecordBatch) *staticRows {
	return &staticRows{schema: schema, rec: rec}
}

func (r *staticRows) Schema() types.Schema { return r.schema }

func (r *staticRows) Next(context.Context) (arrow.RecordBatch, error) {
	if r.rec == nil {
		return nil, io.EOF
	}
	rec := r.rec
	r.rec = nil
	return rec, nil
}

func (r *staticRows) Close() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}
