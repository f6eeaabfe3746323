// Package jobmanager is the paper's JobManager. It accepts jobs, turns each
// JobGraph into an ExecutionGraph (parallelism from the free slots, placement
// round-robin over TaskManagers, network tasks: placement.go) and deploys it
// to its Workers, the TaskManagers (this file); it supervises each Job,
// restarting it from its last complete checkpoint after a failure (job.go),
// runs the checkpoint coordinator of every attempt (coordinator.go), and
// commits what sinks that cannot commit from their TaskManagers staged in
// the checkpoints (commit.go).
//
// In local mode its Worker is the TaskManager in the same process, called
// directly; in distributed mode a client of one in another process
// (exec/control). It may import exec, exec/state and exec/checkpoint.
package jobmanager

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
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
	busy map[exec.SlotRef]int
	// observer is told of every checkpoint (OnCheckpoint).
	observer atomic.Pointer[func(*Job, CheckpointRecord)]
	// committers commit the states of sinks, by connector (commit.go).
	committers map[string]SinkCommitter
}

// New returns a JobManager with no TaskManagers.
func New(log *slog.Logger) *JobManager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &JobManager{log: log, jobs: map[string]*Job{}, busy: map[exec.SlotRef]int{}}
}

// Worker is a TaskManager as the JobManager sees it: a *TaskManager in this
// process, or a client of one in another process (exec/control).
type Worker interface {
	ID() string
	Slots() []exec.SlotRef
	// DataAddrs maps each network the worker is on to the address other
	// TaskManagers send its network channels to; "" names the default network.
	DataAddrs() map[string]string
	// Deploy starts the tasks of g placed on this worker; rows of "result" tasks
	// go to results.
	Deploy(ctx context.Context, g *exec.ExecutionGraph, results exec.ResultSink) (*exec.Deployment, error)
}

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
func (jm *JobManager) Slots() []exec.SlotRef {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return jm.slots()
}

// BusySlots returns, of every registered slot, whether a running job has a
// task there.
func (jm *JobManager) BusySlots() map[exec.SlotRef]bool {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	m := map[exec.SlotRef]bool{}
	for _, s := range jm.slots() {
		m[s] = jm.busy[s] > 0
	}
	return m
}

// slots lists the slots of every TaskManager. Lock should be held.
func (jm *JobManager) slots() []exec.SlotRef {
	var s []exec.SlotRef
	for _, tm := range jm.tms {
		s = append(s, tm.Slots()...)
	}
	return s
}

// Schedule returns the ExecutionGraph job would get now, without running it (for
// EXPLAIN).
func (jm *JobManager) Schedule(job *exec.JobGraph) (*exec.ExecutionGraph, error) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	job, slots, free := jm.place(job)
	g, err := BuildExecutionGraph("explain", job, slots)
	if err == nil {
		PlaceNetworkTasks(g, free)
	}
	return g, err
}

// place resolves job's automatic parallelism to the number of free slots and
// returns the slots in placement order (PlaceSlots), and the free ones. Lock
// should be held.
func (jm *JobManager) place(job *exec.JobGraph) (*exec.JobGraph, []exec.SlotRef, []exec.SlotRef) {
	var free, busy []exec.SlotRef
	for _, s := range jm.slots() {
		if jm.busy[s] > 0 {
			busy = append(busy, s)
		} else {
			free = append(free, s)
		}
	}
	return job.WithParallelism(len(free)), PlaceSlots(free, busy), free
}

// occupy counts job g as running on the slots of its tasks (delta 1), or no
// longer (delta -1). Lock should be held.
func (jm *JobManager) occupy(g *exec.ExecutionGraph, delta int) {
	seen := map[exec.SlotRef]bool{}
	slots := make([]exec.SlotRef, 0, len(g.Tasks)+len(g.NetTasks))
	for _, t := range g.Tasks {
		slots = append(slots, t.Slot)
	}
	for _, nt := range g.NetTasks {
		slots = append(slots, nt.Slot)
	}
	for _, s := range slots {
		if !seen[s] {
			seen[s] = true
			jm.busy[s] += delta
			if jm.busy[s] <= 0 {
				delete(jm.busy, s)
			}
		}
	}
}

// Submit schedules and starts a job without checkpoints (SubmitJob).
func (jm *JobManager) Submit(statement string, job *exec.JobGraph, results exec.ResultSink) (*Job, error) {
	return jm.SubmitJob(statement, job, results, JobOptions{})
}

// SubmitJob schedules and starts a job. The job runs until its sources end, it
// fails (after restarts, with checkpoints: until cancelled), or it is
// cancelled; it does not depend on the caller's context, so a continuous job
// outlives the statement that started it. results receives the rows of a
// "result" sink.
func (jm *JobManager) SubmitJob(statement string, job *exec.JobGraph, results exec.ResultSink, opts JobOptions) (*Job, error) {
	jm.mu.Lock()
	id := opts.ID
	if id == "" {
		jm.seq++
		id = strconv.Itoa(jm.seq)
	} else if n, err := strconv.Atoi(id); err == nil && n > jm.seq {
		jm.seq = n
	}
	_, taken := jm.jobs[id]
	jm.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("exec: job %s exists", id)
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Second
	}
	j := &Job{ID: id, Statement: statement, Started: time.Now(), jm: jm, results: results, opts: opts,
		done: make(chan struct{}), cancelCh: make(chan struct{}), state: JobRunning}
	j.stats.Restarts = opts.Restarts
	if opts.CheckpointURL != "" {
		store, err := checkpoint.Open(context.Background(), opts.CheckpointURL)
		if err != nil {
			return nil, err
		}
		j.store = store
		if !opts.Resume {
			// A new job: checkpoints under its id are an earlier job's.
			if err := store.DropJob(context.Background(), id); err != nil {
				store.Close()
				return nil, err
			}
		}
		if opts.Resume {
			latest, ok, err := store.Latest(context.Background(), id)
			if err != nil {
				store.Close()
				return nil, err
			}
			if ok {
				j.stats.Last, j.stats.RestoredFrom = latest, latest
			}
		}
	}
	g, err := jm.deploy(j, job, 0, j.stats.RestoredFrom)
	if err != nil {
		if j.store != nil {
			j.store.Close()
		}
		return nil, err
	}
	j.Graph = g
	jm.mu.Lock()
	jm.jobs[id] = j
	jm.mu.Unlock()
	go j.supervise()
	return j, nil
}

// deploy places and starts one attempt of job j, its tasks restoring from
// checkpoint restore (0: none), and makes it j's current attempt.
func (jm *JobManager) deploy(j *Job, job *exec.JobGraph, attempt int, restore int64) (*exec.ExecutionGraph, error) {
	jm.mu.Lock()
	job, slots, free := jm.place(job)
	tms := append([]Worker(nil), jm.tms...)
	g, err := BuildExecutionGraph(j.ID, job, slots)
	if err == nil {
		PlaceNetworkTasks(g, free)
		jm.occupy(g, 1) // before unlocking, so a job submitted at once sees these slots busy
	}
	jm.mu.Unlock()
	if err != nil {
		return nil, err
	}
	g.Attempt, g.RestoreFrom = attempt, restore
	if j.store != nil {
		g.CheckpointURL = j.opts.CheckpointURL
	}
	release := func() {
		jm.mu.Lock()
		jm.occupy(g, -1)
		jm.mu.Unlock()
	}
	if restore > 0 {
		// What the sinks staged in the checkpoint may not be committed yet
		// (commit.go): it is before anything runs on from it.
		if err := j.commitSinks(context.Background(), g, restore); err != nil {
			release()
			return nil, err
		}
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
	// Deploy on every TaskManager that holds a task of the job, all at once (each
	// deployment of a remote one is a round trip); if one refuses, stop the others.
	type deployed struct {
		d   *exec.Deployment
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
			d, err := tm.Deploy(context.Background(), g, j.results)
			ch <- deployed{d, err}
		}()
	}
	var firstErr error
	var ds []*exec.Deployment
	for _, ch := range deploys {
		r := <-ch
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		ds = append(ds, r.d)
	}
	if firstErr != nil {
		for _, started := range ds {
			started.Cancel(fmt.Errorf("%w: deployment failed", exec.ErrJobCancelled))
			<-started.Done()
		}
		release()
		return nil, firstErr
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cancelCause != nil { // cancelled while deploying
		for _, d := range ds {
			d.Cancel(j.cancelCause)
		}
	}
	j.deployments, j.release, j.attempt, j.current = ds, release, attempt, g
	return g, nil
}

func hasTaskOn(g *exec.ExecutionGraph, tm string) bool {
	for _, t := range g.Tasks {
		if t.Slot.TaskManager == tm {
			return true
		}
	}
	return false
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
		j.Cancel(exec.ErrJobCancelled)
		<-j.Done()
	}
}
