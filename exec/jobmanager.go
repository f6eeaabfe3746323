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

	"github.com/hummer-db/hummer/exec/checkpoint"
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
func (jm *JobManager) place(job *JobGraph) (*JobGraph, []SlotRef, []SlotRef) {
	var free, busy []SlotRef
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
func (jm *JobManager) occupy(g *ExecutionGraph, delta int) {
	seen := map[SlotRef]bool{}
	slots := make([]SlotRef, 0, len(g.Tasks)+len(g.NetTasks))
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

// Job is a submitted job. A job that takes checkpoints restarts after a
// failure (a TaskManager lost, a task failed), from its last complete
// checkpoint, on the TaskManagers there are, until it is cancelled.
type Job struct {
	ID        string
	Statement string
	Started   time.Time
	// Graph is the first attempt's ExecutionGraph (a restart places the same
	// tasks anew).
	Graph *ExecutionGraph

	jm      *JobManager
	results ResultSink
	opts    JobOptions
	store   *checkpoint.Store // nil without checkpoints
	done    chan struct{}

	mu          sync.Mutex
	deployments []*Deployment // of the current attempt, one per TaskManager
	release     func()        // frees the current attempt's slots
	attempt     int
	state       JobState
	err         error
	cancelCause error         // set by Cancel
	cancelCh    chan struct{} // closed by Cancel
	stats       CheckpointStats
	// lastTriggered is the newest checkpoint id handed out.
	lastTriggered int64
}

// JobOptions are what a job is submitted with besides its graph; the zero value
// is a job without checkpoints.
type JobOptions struct {
	// ID, when set, is the job's id: a job resumed after a JobManager restart
	// keeps its id, under which its checkpoints are stored.
	ID string
	// CheckpointURL is the checkpoint store (exec/checkpoint); empty: the job
	// takes no checkpoints and does not restart.
	CheckpointURL string
	// CheckpointInterval is the time between checkpoints (default 1s).
	CheckpointInterval time.Duration
	// Resume starts the job from the newest complete checkpoint of ID, if any.
	Resume bool
}

// CheckpointStats describes a job's checkpoints and restarts.
type CheckpointStats struct {
	Completed    int64         // number of complete checkpoints
	Failed       int64         // declined or timed out
	Last         int64         // id of the newest complete checkpoint
	LastDuration time.Duration // from trigger to complete
	LastBytes    int64         // state stored
	LastAlign    time.Duration // longest barrier alignment of a task
	Restarts     int
	RestoredFrom int64 // the checkpoint the current attempt started from
}

// Submit schedules and starts a job without checkpoints (SubmitJob).
func (jm *JobManager) Submit(statement string, job *JobGraph, results ResultSink) (*Job, error) {
	return jm.SubmitJob(statement, job, results, JobOptions{})
}

// SubmitJob schedules and starts a job. The job runs until its sources end, it
// fails (after restarts, with checkpoints: until cancelled), or it is
// cancelled; it does not depend on the caller's context, so a continuous job
// outlives the statement that started it. results receives the rows of a
// "result" sink.
func (jm *JobManager) SubmitJob(statement string, job *JobGraph, results ResultSink, opts JobOptions) (*Job, error) {
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
func (jm *JobManager) deploy(j *Job, job *JobGraph, attempt int, restore int64) (*ExecutionGraph, error) {
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
			d, err := tm.Deploy(context.Background(), g, j.results)
			ch <- deployed{d, err}
		}()
	}
	var firstErr error
	var ds []*Deployment
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
			started.Cancel(fmt.Errorf("%w: deployment failed", ErrJobCancelled))
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
	j.deployments, j.release, j.attempt = ds, release, attempt
	return g, nil
}

func hasTaskOn(g *ExecutionGraph, tm string) bool {
	for _, t := range g.Tasks {
		if t.Slot.TaskManager == tm {
			return true
		}
	}
	return false
}

// restartDelay is how long a failed job waits before its first restart.
const restartDelay = 500 * time.Millisecond

// supervise runs the job's attempts: it waits for the current one, and after a
// failure of a job with checkpoints deploys the next from the newest complete
// checkpoint, retrying until there are slots or the job is cancelled.
func (j *Job) supervise() {
	log := j.jm.log.With("job", j.ID)
	var err error
	for {
		err = j.runAttempt()
		j.mu.Lock()
		cancelled := j.cancelCause
		j.mu.Unlock()
		if err == nil || cancelled != nil || errors.Is(err, ErrJobCancelled) || j.store == nil {
			break
		}
		log.Warn("job failed; restarting from its last checkpoint", "err", err)
		// The restart waits a moment, for what the failed attempt holds (its
		// sinks' transactions, say) to wind down: restarting at once measured
		// slower recoveries, the new attempt's sinks waiting on the old ones.
		// As Flink's fixed-delay strategy, a failure that repeats restarts at
		// that pace until the job is cancelled.
		wait := restartDelay
		if err = j.restart(wait); err != nil {
			break
		}
	}
	j.mu.Lock()
	switch {
	case err == nil:
		j.state = JobFinished
	case errors.Is(err, ErrJobCancelled) || j.cancelCause != nil:
		if !errors.Is(err, ErrJobCancelled) {
			err = j.cancelCause
		}
		j.state, j.err = JobCancelled, err
	default:
		j.state, j.err = JobFailed, err
	}
	j.mu.Unlock()
	if j.store != nil {
		j.store.Close()
	}
	close(j.done)
	if err != nil {
		log.Info("job ended", "state", j.State(), "err", err)
	} else {
		log.Debug("job ended", "state", j.State())
	}
}

// restart deploys the next attempt from the newest complete checkpoint, after
// wait. It returns only when that attempt runs (retrying, backing off, while
// there are no slots for it), or with the cancellation's cause.
func (j *Job) restart(wait time.Duration) error {
	backoff := 250 * time.Millisecond
	for {
		select {
		case <-time.After(wait):
		case <-j.cancelCh:
		}
		j.mu.Lock()
		cause, attempt := j.cancelCause, j.attempt+1
		j.mu.Unlock()
		if cause != nil {
			return cause
		}
		latest, _, err := j.store.Latest(context.Background(), j.ID)
		if err == nil {
			_, err = j.jm.deploy(j, j.Graph.Job, attempt, latest)
		}
		if err == nil {
			j.mu.Lock()
			j.stats.Restarts++
			j.stats.RestoredFrom = latest
			if latest > j.stats.Last {
				j.stats.Last = latest
			}
			j.mu.Unlock()
			return nil
		}
		j.jm.log.Warn("restarting job", "job", j.ID, "err", err)
		wait, backoff = backoff, min(2*backoff, 5*time.Second)
	}
}

// runAttempt waits for every deployment of the current attempt, with the
// checkpoint coordinator running beside them; the first failure cancels the
// others and is returned.
func (j *Job) runAttempt() error {
	j.mu.Lock()
	ds, release := j.deployments, j.release
	j.mu.Unlock()
	ctx, stopCoordinator := context.WithCancel(context.Background())
	coordinated := make(chan struct{})
	if j.store != nil {
		go func() {
			defer close(coordinated)
			j.coordinate(ctx, ds)
		}()
	} else {
		close(coordinated)
	}
	failed := make(chan error, len(ds))
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-d.Done()
			if err := d.Err(); err != nil {
				failed <- err
			}
		}()
	}
	go func() {
		wg.Wait()
		close(failed)
	}()
	var first error
	for err := range failed {
		if first == nil {
			first = err
			for _, d := range ds {
				d.Cancel(err)
			}
		}
	}
	stopCoordinator()
	<-coordinated
	release()
	return first
}

// coordinate is the checkpoint coordinator of one attempt: every interval it
// triggers a checkpoint (one at a time), collects the tasks' acknowledgements,
// marks the checkpoint complete in the store once every task stored its state,
// tells the tasks, and keeps the last few checkpoints.
func (j *Job) coordinate(ctx context.Context, ds []*Deployment) {
	const keep = 3
	timeout := max(10*j.opts.CheckpointInterval, 10*time.Second)
	tasks := 0
	for _, d := range ds {
		tasks += len(d.Metrics())
	}
	acks := make(chan CheckpointAck)
	for _, d := range ds {
		go func() {
			for {
				select {
				case a := <-d.Acks():
					select {
					case acks <- a:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	type pending struct {
		id      int64
		started time.Time
		acked   map[TaskID]bool
		bytes   int64
		align   time.Duration
	}
	var cur *pending
	finished := map[TaskID]bool{} // tasks that ended: no barrier reaches them
	tick := time.NewTicker(j.opts.CheckpointInterval)
	defer tick.Stop()
	// trigger starts the next checkpoint, unless one is still under way.
	trigger := func() {
		if cur != nil {
			if time.Since(cur.started) < timeout {
				return // one checkpoint at a time
			}
			j.jm.log.Warn("checkpoint timed out", "job", j.ID, "checkpoint", cur.id, "acked", len(cur.acked), "tasks", tasks)
			j.mu.Lock()
			j.stats.Failed++
			j.mu.Unlock()
		}
		j.mu.Lock()
		id := max(j.stats.Last, j.lastTriggered) + 1
		j.lastTriggered = id
		j.mu.Unlock()
		cur = &pending{id: id, started: time.Now(), acked: map[TaskID]bool{}}
		for _, d := range ds {
			d.TriggerCheckpoint(id)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			trigger()
		case a := <-acks:
			if a.Finished {
				finished[a.Task] = true
				if cur == nil {
					continue
				}
			} else if cur == nil || a.Checkpoint != cur.id {
				continue
			}
			if a.Err != "" {
				j.jm.log.Warn("checkpoint declined", "job", j.ID, "checkpoint", cur.id, "task", a.Task, "err", a.Err)
				j.mu.Lock()
				j.stats.Failed++
				j.mu.Unlock()
				cur = nil
				continue
			}
			if !a.Finished {
				cur.acked[a.Task] = true
				cur.bytes += int64(a.Bytes)
				cur.align = max(cur.align, a.Align)
			}
			// A task that ended before the barrier reached it is in the
			// checkpoint as ended; one that stored its state, then ended, is
			// in it with that state.
			var ended []TaskID
			for t := range finished {
				if !cur.acked[t] {
					ended = append(ended, t)
				}
			}
			if len(cur.acked)+len(ended) < tasks {
				continue
			}
			if err := j.markEnded(ctx, cur.id, ended); err != nil {
				j.jm.log.Warn("checkpoint not completed", "job", j.ID, "checkpoint", cur.id, "err", err)
				cur = nil
				continue
			}
			if err := j.store.Complete(ctx, j.ID, cur.id); err != nil {
				j.jm.log.Warn("checkpoint not completed", "job", j.ID, "checkpoint", cur.id, "err", err)
				cur = nil
				continue
			}
			for _, d := range ds {
				d.CheckpointComplete(cur.id)
			}
			j.mu.Lock()
			j.stats.Completed++
			j.stats.Last = cur.id
			j.stats.LastDuration = time.Since(cur.started)
			j.stats.LastBytes = cur.bytes
			j.stats.LastAlign = cur.align
			j.mu.Unlock()
			if err := j.store.Prune(ctx, j.ID, keep); err != nil {
				j.jm.log.Warn("pruning checkpoints", "job", j.ID, "err", err)
			}
			cur = nil
		}
	}
}

// markEnded stores, in checkpoint id, that the tasks ended before it (see
// streamTask.storeFinal).
func (j *Job) markEnded(ctx context.Context, id int64, ended []TaskID) error {
	for _, t := range ended {
		if err := j.store.Put(ctx, j.ID, id, taskKey(t), endedMarker); err != nil {
			return err
		}
	}
	return nil
}

// ReadView returns the current rows of the job's view task (a materialised
// view's job) as an Arrow IPC stream; after the job ended, its final rows.
func (j *Job) ReadView() ([]byte, error) {
	j.mu.Lock()
	ds := j.deployments
	j.mu.Unlock()
	for _, d := range ds {
		data, err := d.ReadView()
		if errors.Is(err, ErrNoView) {
			continue
		}
		return data, err
	}
	return nil, ErrNoView
}

// Checkpoints returns the job's checkpoint and restart counters.
func (j *Job) Checkpoints() CheckpointStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
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
	j.mu.Lock()
	if j.cancelCause == nil {
		j.cancelCause = cause
		close(j.cancelCh)
	}
	ds := j.deployments
	j.mu.Unlock()
	for _, d := range ds {
		d.Cancel(cause)
	}
}

// Metrics returns each task's counters, of the current attempt.
func (j *Job) Metrics() map[TaskID]*TaskMetrics {
	j.mu.Lock()
	ds := j.deployments
	j.mu.Unlock()
	m := map[TaskID]*TaskMetrics{}
	for _, d := range ds {
		for id, tm := range d.Metrics() {
			m[id] = tm
		}
	}
	return m
}
