package exec

import (
	"errors"
	"sync"
)

// Deployment is the set of tasks of one job running on one TaskManager, as the
// JobManager holds it: the TaskManager in this process makes one for the tasks
// it runs, the client of one in another process for the tasks that run there.
type Deployment struct {
	done    chan struct{}
	err     error // the first task failure; set before done closes
	cancel  func(cause error)
	metrics map[TaskID]*TaskMetrics
	// Checkpoints: trigger asks the source tasks to inject a barrier, complete
	// tells every task a checkpoint is complete; the tasks' answers arrive on acks.
	// They reach the tasks, so finish drops them: a finished job stays listed,
	// and its tasks and their operators' state must not stay with it.
	mu                sync.Mutex // guards trigger and complete
	trigger, complete func(id int64)
	acks              chan CheckpointAck
	// readView returns the rows of the job's view task here, if it has one
	// (ErrNoView otherwise); they stay readable after the tasks ended.
	readView func(now bool) ([]byte, error)
}

// NewDeployment returns the deployment of tasks: cancel asks them to stop,
// and the caller calls finish once, when they have stopped, with their error
// (nil when they finished). The counters of the tasks are fixed objects the
// tasks, or the reports from the process they run in, update (Metrics).
func NewDeployment(cancel func(cause error), tasks []TaskID) (d *Deployment, finish func(err error)) {
	d = &Deployment{done: make(chan struct{}), metrics: map[TaskID]*TaskMetrics{},
		trigger: func(int64) {}, complete: func(int64) {}, acks: make(chan CheckpointAck, 64),
		readView: func(bool) ([]byte, error) { return nil, ErrNoView }}
	for _, id := range tasks {
		d.metrics[id] = &TaskMetrics{}
	}
	d.cancel = cancel
	var once sync.Once
	finish = func(err error) {
		once.Do(func() {
			d.OnCheckpoint(func(int64) {}, func(int64) {})
			d.err = err
			close(d.done)
		})
	}
	return d, finish
}

// ErrNoView: the deployment has no view task.
var ErrNoView = errors.New("exec: no view task here")

// ErrViewNotReady: the view has not caught up with its inputs yet
// (ViewReader).
var ErrViewNotReady = errors.New("exec: the view has not caught up with its inputs yet")

// OnReadView sets how the deployment reads its view task.
func (d *Deployment) OnReadView(read func(now bool) ([]byte, error)) { d.readView = read }

// ReadView returns the current rows of the deployment's view task as an Arrow
// IPC stream (ViewState.Snapshot), ErrViewNotReady (see ViewReader), or
// ErrNoView.
func (d *Deployment) ReadView(now bool) ([]byte, error) { return d.readView(now) }

// OnCheckpoint sets how the deployment passes checkpoint triggers and
// completions on to its tasks.
func (d *Deployment) OnCheckpoint(trigger, complete func(id int64)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trigger, d.complete = trigger, complete
}

// TriggerCheckpoint asks the deployment's source tasks to inject checkpoint
// id's barrier; once the deployment has finished it does nothing.
func (d *Deployment) TriggerCheckpoint(id int64) {
	d.mu.Lock()
	f := d.trigger
	d.mu.Unlock()
	f(id)
}

// CheckpointComplete tells the deployment's tasks that checkpoint id is
// complete; once the deployment has finished it does nothing.
func (d *Deployment) CheckpointComplete(id int64) {
	d.mu.Lock()
	f := d.complete
	d.mu.Unlock()
	f(id)
}

// Acks delivers the tasks' answers to checkpoint barriers.
func (d *Deployment) Acks() <-chan CheckpointAck { return d.acks }

// Ack delivers a task's answer. It never blocks: with the queue full (nobody
// reading) the answer is dropped, and its checkpoint times out.
func (d *Deployment) Ack(a CheckpointAck) {
	select {
	case d.acks <- a:
	default:
	}
}

// Done is closed when every task has stopped.
func (d *Deployment) Done() <-chan struct{} { return d.done }

// Err returns the first task failure, once Done is closed.
func (d *Deployment) Err() error { return d.err }

// Cancel stops every task with the given cause.
func (d *Deployment) Cancel(cause error) { d.cancel(cause) }

// Metrics returns each task's counters. The map is fixed once the deployment
// exists; the counters change as the tasks run.
func (d *Deployment) Metrics() map[TaskID]*TaskMetrics { return d.metrics }
