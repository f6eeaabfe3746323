package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"
)

// JobState is where a job is in its life.
type JobState string

const (
	JobRunning   JobState = "running"
	JobFinished  JobState = "finished"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// JobManager accepts jobs, turns each JobGraph into an ExecutionGraph (parallelism,
// placement on slots) and deploys it to its TaskManagers. In local mode it calls
// its one in-process TaskManager directly, as the paper's local mode does.
type JobManager struct {
	log *slog.Logger

	mu   sync.Mutex
	tms  []*TaskManager
	jobs map[string]*Job
	seq  int
}

// NewJobManager returns a JobManager with no TaskManagers.
func NewJobManager(log *slog.Logger) *JobManager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &JobManager{log: log, jobs: map[string]*Job{}}
}

// AddTaskManager registers a TaskManager and its slots.
func (jm *JobManager) AddTaskManager(tm *TaskManager) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.tms = append(jm.tms, tm)
}

// Slots returns every registered slot.
func (jm *JobManager) Slots() []SlotRef {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return jm.slots()
}

// slots lists the slots of every TaskManager. Lock should be held.
func (jm *JobManager) slots() []SlotRef {
	var s []SlotRef
	for _, tm := range jm.tms {
		s = append(s, tm.Slots()...)
	}
	return s
}

// Schedule returns the ExecutionGraph job would get now, without running it (for
// EXPLAIN).
func (jm *JobManager) Schedule(job *JobGraph) (*ExecutionGraph, error) {
	return BuildExecutionGraph("explain", job, jm.Slots())
}

// Job is a submitted job.
type Job struct {
	ID        string
	Statement string
	Started   time.Time
	Graph     *ExecutionGraph

	deployment *Deployment
	done       chan struct{}

	mu    sync.Mutex
	state JobState
	err   error
}

// Submit schedules and starts a job. The job runs until its sources end, it fails,
// or it is cancelled; it does not depend on the caller's context, so a continuous
// job outlives the statement that started it. results receives the rows of a
// "result" sink.
func (jm *JobManager) Submit(statement string, job *JobGraph, results ResultSink) (*Job, error) {
	jm.mu.Lock()
	jm.seq++
	id := strconv.Itoa(jm.seq)
	slots := jm.slots()
	tms := append([]*TaskManager(nil), jm.tms...)
	jm.mu.Unlock()

	g, err := BuildExecutionGraph(id, job, slots)
	if err != nil {
		return nil, err
	}
	if len(tms) != 1 {
		return nil, fmt.Errorf("exec: local mode runs one TaskManager, have %d", len(tms))
	}
	d, err := tms[0].Deploy(context.Background(), g, results)
	if err != nil {
		return nil, err
	}
	j := &Job{ID: id, Statement: statement, Started: time.Now(), Graph: g,
		deployment: d, done: make(chan struct{}), state: JobRunning}
	jm.mu.Lock()
	jm.jobs[id] = j
	jm.mu.Unlock()
	go func() {
		<-d.Done()
		j.mu.Lock()
		switch err := d.Err(); {
		case err == nil:
			j.state = JobFinished
		case errors.Is(err, ErrJobCancelled):
			j.state, j.err = JobCancelled, err
		default:
			j.state, j.err = JobFailed, err
		}
		j.mu.Unlock()
		close(j.done)
		if j.Err() != nil {
			jm.log.Info("job ended", "job", id, "state", j.State(), "err", j.Err())
		} else {
			jm.log.Debug("job ended", "job", id, "state", j.State())
		}
	}()
	return j, nil
}

// Jobs returns the jobs the JobManager knows, in submission order.
func (jm *JobManager) Jobs() []*Job {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	js := make([]*Job, 0, len(jm.jobs))
	for _, j := range jm.jobs {
		js = append(js, j)
	}
	sort.Slice(js, func(a, b int) bool {
		x, _ := strconv.Atoi(js[a].ID)
		y, _ := strconv.Atoi(js[b].ID)
		return x < y
	})
	return js
}

// Forget drops a finished job from the list (a one-off query's job, once its
// client has its result).
func (jm *JobManager) Forget(id string) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	delete(jm.jobs, id)
}

// Close cancels every running job and waits for them to stop.
func (jm *JobManager) Close() {
	for _, j := range jm.Jobs() {
		j.Cancel(ErrJobCancelled)
		<-j.Done()
	}
}

// Done is closed when the job has stopped.
func (j *Job) Done() <-chan struct{} { return j.done }

// Err is why the job stopped, nil if it finished.
func (j *Job) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// State returns the job's state.
func (j *Job) State() JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

// Cancel stops the job; cause should wrap ErrJobCancelled.
func (j *Job) Cancel(cause error) { j.deployment.Cancel(cause) }

// Metrics returns each task's counters.
func (j *Job) Metrics() map[TaskID]*TaskMetrics { return j.deployment.Metrics() }
