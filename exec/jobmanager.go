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
	tms  []Worker
	jobs map[string]*Job
	seq  int
	// busy counts, per slot, the running jobs with a task there.
	busy map[SlotRef]int
}

// NewJobManager returns a JobManager with no TaskManagers.
func NewJobManager(log *slog.Logger) *JobManager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &JobManager{log: log, jobs: map[string]*Job{}, busy: map[SlotRef]int{}}
}

// Worker is a TaskManager as the JobManager sees it: a *TaskManager in this
// process, or a client of one in another process (exec/control).
type Worker interface {
	ID() string
	Slots() []SlotRef
	// DataAddrs maps each network the worker is on to the address other
	// TaskManagers send its network channels to; "" names the default network.
	DataAddrs() map[string]string
	// Deploy starts the tasks of g placed on this worker; rows of "result" tasks
	// go to results.
	Deploy(ctx context.Context, g *ExecutionGraph, results ResultSink) (*Deployment, error)
}

var _ Worker = (*TaskManager)(nil)

// AddTaskManager registers a TaskManager and its slots.
func (jm *JobManager) AddTaskManager(tm Worker) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.tms = append(jm.tms, tm)
}

// RemoveTaskManager forgets the TaskManager with the given id (it stopped
// heartbeating, or left); its jobs are failed by whoever noticed.
func (jm *JobManager) RemoveTaskManager(id string) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	for i, tm := range jm.tms {
		if tm.ID() == id {
			jm.tms = append(jm.tms[:i], jm.tms[i+1:]...)
			return
		}
	}
}

// TaskManagers returns the registered TaskManagers.
func (jm *JobManager) TaskManagers() []Worker {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return append([]Worker(nil), jm.tms...)
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
	jm.mu.Lock()
	job, slots := jm.place(job)
	jm.mu.Unlock()
	return BuildExecutionGraph("explain", job, slots)
}

// place resolves job's automatic parallelism to the number of free slots and
// returns the slots in placement order (PlaceSlots). Lock should be held.
func (jm *JobManager) place(job *JobGraph) (*JobGraph, []SlotRef) {
	var free, busy []SlotRef
	for _, s := range jm.slots() {
		if jm.busy[s] > 0 {
			busy = append(busy, s)
		} else {
			free = append(free, s)
		}
	}
	return job.WithParallelism(len(free)), PlaceSlots(free, busy)
}

// occupy counts job g as running on the slots of its tasks (delta 1), or no
// longer (delta -1). Lock should be held.
func (jm *JobManager) occupy(g *ExecutionGraph, delta int) {
	seen := map[SlotRef]bool{}
	for _, t := range g.Tasks {
		if !seen[t.Slot] {
			seen[t.Slot] = true
			jm.busy[t.Slot] += delta
			if jm.busy[t.Slot] <= 0 {
				delete(jm.busy, t.Slot)
			}
		}
	}
}

// Job is a submitted job.
type Job struct {
	ID        string
	Statement string
	Started   time.Time
	Graph     *ExecutionGraph

	deployments []*Deployment // one per TaskManager running tasks of the job
	done        chan struct{}
	onEnd       func() // frees the job's slots, before done closes

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
	job, slots := jm.place(job)
	tms := append([]Worker(nil), jm.tms...)
	g, err := BuildExecutionGraph(id, job, slots)
	if err == nil {
		jm.occupy(g, 1) // before unlocking, so a job submitted at once sees these slots busy
	}
	jm.mu.Unlock()
	if err != nil {
		return nil, err
	}
	release := func() {
		jm.mu.Lock()
		jm.occupy(g, -1)
		jm.mu.Unlock()
	}
	g.DataAddrs = map[string]string{}
	for _, tm := range tms {
		a, ok := tm.DataAddrs()[job.Network]
		switch {
		case ok:
			g.DataAddrs[tm.ID()] = a
		case job.Network != "" && hasTaskOn(g, tm.ID()):
			release()
			return nil, fmt.Errorf("%w: TaskManager %s is not on network %q", ErrNoSlots, tm.ID(), job.Network)
		}
	}
	j := &Job{ID: id, Statement: statement, Started: time.Now(), Graph: g,
		done: make(chan struct{}), state: JobRunning}
	// Deploy on every TaskManager that holds a task of the job, all at once (each
	// deployment of a remote one is a round trip); if one refuses, stop the others.
	type deployed struct {
		d   *Deployment
		err error
	}
	var deploys []chan deployed
	for _, tm := range tms {
		if !hasTaskOn(g, tm.ID()) {
			continue
		}
		ch := make(chan deployed, 1)
		deploys = append(deploys, ch)
		go func() {
			d, err := tm.Deploy(context.Background(), g, results)
			ch <- deployed{d, err}
		}()
	}
	var firstErr error
	for _, ch := range deploys {
		r := <-ch
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		j.deployments = append(j.deployments, r.d)
	}
	if firstErr != nil {
		for _, started := range j.deployments {
			started.Cancel(fmt.Errorf("%w: deployment failed", ErrJobCancelled))
			<-started.Done()
		}
		release()
		return nil, firstErr
	}
	jm.mu.Lock()
	jm.jobs[id] = j
	jm.mu.Unlock()
	j.onEnd = release
	go j.watch(jm.log)
	return j, nil
}

func hasTaskOn(g *ExecutionGraph, tm string) bool {
	for _, t := range g.Tasks {
		if t.Slot.TaskManager == tm {
			return true
		}
	}
	return false
}

// watch waits for every deployment of the job; the first failure cancels the
// others and becomes the job's error.
func (j *Job) watch(log *slog.Logger) {
	failed := make(chan error, len(j.deployments))
	var wg sync.WaitGroup
	for _, d := range j.deployments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-d.Done()
			if err := d.Err(); err != nil {
				failed <- err
			}
		}()
	}
	var first error
	go func() {
		wg.Wait()
		close(failed)
	}()
	for err := range failed {
		if first == nil {
			first = err
			for _, d := range j.deployments {
				d.Cancel(err)
			}
		}
	}
	j.mu.Lock()
	switch {
	case first == nil:
		j.state = JobFinished
	case errors.Is(first, ErrJobCancelled):
		j.state, j.err = JobCancelled, first
	default:
		j.state, j.err = JobFailed, first
	}
	j.mu.Unlock()
	j.onEnd()
	close(j.done)
	if first != nil {
		log.Info("job ended", "job", j.ID, "state", j.State(), "err", first)
	} else {
		log.Debug("job ended", "job", j.ID, "state", j.State())
	}
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
func (j *Job) Cancel(cause error) {
	for _, d := range j.deployments {
		d.Cancel(cause)
	}
}

// Metrics returns each task's counters.
func (j *Job) Metrics() map[TaskID]*TaskMetrics {
	m := map[TaskID]*TaskMetrics{}
	for _, d := range j.deployments {
		for id, tm := range d.Metrics() {
			m[id] = tm
		}
	}
	return m
}
