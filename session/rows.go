package session

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// jobRows streams the result of a query job to the client. It is the job's
// ResultSink: the "result" tasks Send batches into a small queue that Next
// drains, so a slow client backpressures the job.
type jobRows struct {
	schema types.Schema
	ch     chan exec.Batch
	jm     *exec.JobManager
	job    *exec.Job
	once   sync.Once
}

var (
	_ Rows            = (*jobRows)(nil)
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
	return &jobRows{schema: schema, ch: make(chan exec.Batch, exec.QueueCapacity)}
}

// start ties the rows to their job: the queue closes once every task has
// stopped, after the last Send.
func (r *jobRows) start(jm *exec.JobManager, job *exec.Job) {
	r.jm, r.job = jm, job
	go func() {
		<-job.Done()
		close(r.ch)
	}()
}

// Send implements exec.ResultSink.
func (r *jobRows) Send(ctx context.Context, _ string, b exec.Batch) error {
	b.Rec.Retain()
	select {
	case r.ch <- b:
		return nil
	case <-ctx.Done():
		b.Rec.Release()
		return context.Cause(ctx)
	}
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
	for _, op := range b.Ops {
		if op != exec.Insert {
			b.Rec.Release()
			return nil, fmt.Errorf("session: a query result cannot retract rows; use a materialised view")
		}
	}
	return b.Rec, nil
}

func (r *jobRows) NextChanges(ctx context.Context) (exec.Batch, error) {
	select {
	case b, ok := <-r.ch:
		if ok {
			return b, nil
		}
		if err := r.job.Err(); err != nil {
			return exec.Batch{}, err
		}
		return exec.Batch{}, io.EOF
	case <-ctx.Done():
		return exec.Batch{}, context.Cause(ctx)
	}
}

// Close cancels the job if it still runs, releases what it queued and forgets it.
func (r *jobRows) Close() {
	r.once.Do(func() {
		r.job.Cancel(fmt.Errorf("%w: result closed", exec.ErrJobCancelled))
		for b := range r.ch {
			b.Rec.Release()
		}
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
