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
	ch     chan arrow.RecordBatch
	jm     *exec.JobManager
	job    *exec.Job
	once   sync.Once
}

var (
	_ Rows            = (*jobRows)(nil)
	_ exec.ResultSink = (*jobRows)(nil)
)

func newJobRows(schema types.Schema) *jobRows {
	return &jobRows{schema: schema, ch: make(chan arrow.RecordBatch, exec.QueueCapacity)}
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
	for _, op := range b.Ops {
		if op != exec.Insert {
			return fmt.Errorf("session: a query result cannot retract rows; use a materialised view")
		}
	}
	b.Rec.Retain()
	select {
	case r.ch <- b.Rec:
		return nil
	case <-ctx.Done():
		b.Rec.Release()
		return context.Cause(ctx)
	}
}

func (r *jobRows) Schema() types.Schema { return r.schema }

func (r *jobRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case rec, ok := <-r.ch:
		if ok {
			return rec, nil
		}
		if err := r.job.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Close cancels the job if it still runs, releases what it queued and forgets it.
func (r *jobRows) Close() {
	r.once.Do(func() {
		r.job.Cancel(fmt.Errorf("%w: result closed", exec.ErrJobCancelled))
		for rec := range r.ch {
			rec.Release()
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
