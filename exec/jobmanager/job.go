package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/network"
)

// JobState is where a job is in its life.
type JobState string

const (
	JobRunning   JobState = "running"
	JobFinished  JobState = "finished"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
	// JobRestarting: an attempt failed and the next is about to be deployed
	// from the last complete checkpoint (Job.Failure says why).
	JobRestarting JobState = "restarting"
	// JobWaitingForSlots: the next attempt finds no slots (no TaskManager,
	// or too few free slots) and is retried with backoff.
	JobWaitingForSlots JobState = "waiting for slots"
)

// Job is a submitted job. A job that takes checkpoints restarts after a
// failure (a TaskManager lost, a task failed), from its last complete
// checkpoint, on the TaskManagers there are, until it is cancelled.
type Job struct {
	ID        string
	Statement string
	Started   time.Time
	// Graph is the first attempt's ExecutionGraph (a restart places the same
	// tasks anew).
	Graph *exec.ExecutionGraph

	jm      *JobManager
	results exec.ResultSink
	opts    JobOptions
	store   *checkpoint.Store // nil without checkpoints
	done    chan struct{}

	mu          sync.Mutex
	deployments []*exec.Deployment // of the current attempt, one per TaskManager
	release     func()             // frees the current attempt's slots
	attempt     int
	current     *exec.ExecutionGraph // the current attempt's
	ended       time.Time            // when the job stopped; zero while it runs
	state       JobState
	err         error
	// failure is why the job is restarting or waiting for slots (nil while
	// it runs): the failed attempt's error, then what keeps the next from
	// starting.
	failure     error
	cancelCause error         // set by Cancel
	cancelCh    chan struct{} // closed by Cancel
	stats       CheckpointStats
	history     []CheckpointRecord // the last historyLength checkpoints
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
	// CheckpointAtStart triggers the first checkpoint as the job starts, not
	// an interval later: a view over stored tables is caught up when its
	// first barrier reaches it (their scans let it pass only after their
	// snapshot), so a SELECT right after CREATE VIEW waits for the snapshot,
	// not for the interval.
	CheckpointAtStart bool
	// Resume starts the job from the newest complete checkpoint of ID, if any.
	Resume bool
	// FailoverAfter is the number of checkpoints in a row whose failure fails
	// the current attempt over, restarting the job from its last complete
	// checkpoint (SET tolerable_failed_checkpoints = FailoverAfter - 1); 0
	// means DefaultFailoverAfter.
	FailoverAfter int
	// Restarts counts the restarts of the job's earlier runs (before a
	// server or JobManager restart), which CheckpointStats.Restarts counts on
	// from.
	Restarts int
	// OnRestart, when set, is called after each restart of the job, with
	// the job (Checkpoints().Restarts counts it), so that the caller can
	// keep the count across its own restarts.
	OnRestart func(*Job)
}

// DefaultFailoverAfter is JobOptions.FailoverAfter when it is 0: the third
// checkpoint in a row that fails (declined by a task, not completed in the
// store, or timed out) fails the job over (Flink's default tolerates none). So
// one failure under a passing spike costs nothing, while a store that keeps
// failing (a full disk) has the job restart within three intervals, and again,
// with restartDelay and backoff, until checkpoints complete again.
const DefaultFailoverAfter = 3

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
		if err == nil && j.store != nil {
			// The job finished: what its sinks staged after their last
			// checkpoint is in the states they ended with (commit.go).
			// Should the commit fail, the job restarts from its last
			// checkpoint, whose tasks are ended, and commits again.
			err = j.commitSinks(context.Background(), j.Current(), 0)
		}
		j.mu.Lock()
		cancelled := j.cancelCause
		j.mu.Unlock()
		if err == nil || cancelled != nil || errors.Is(err, exec.ErrJobCancelled) || j.store == nil {
			break
		}
		log.Warn("job failed; restarting from its last checkpoint", "err", err)
		j.mu.Lock()
		j.state, j.failure = JobRestarting, err
		j.mu.Unlock()
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
	case errors.Is(err, exec.ErrJobCancelled) || j.cancelCause != nil:
		if !errors.Is(err, exec.ErrJobCancelled) {
			err = j.cancelCause
		}
		j.state, j.err = JobCancelled, err
	default:
		j.state, j.err = JobFailed, err
	}
	j.ended = time.Now()
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
			j.state, j.failure = JobRunning, nil
			j.mu.Unlock()
			if j.opts.OnRestart != nil {
				j.opts.OnRestart(j)
			}
			return nil
		}
		j.jm.log.Warn("restarting job", "job", j.ID, "err", err)
		j.mu.Lock()
		if errors.Is(err, ErrNoSlots) {
			j.state = JobWaitingForSlots
		}
		j.failure = err
		j.mu.Unlock()
		wait, backoff = backoff, min(2*backoff, 5*time.Second)
	}
}

// runAttempt waits for every deployment of the current attempt, with the
// checkpoint coordinator running beside them; the first failure cancels the
// others and is returned, unless the coordinator failed the attempt over
// (too many failed checkpoints), whose error is returned then.
func (j *Job) runAttempt() error {
	j.mu.Lock()
	ds, release, g := j.deployments, j.release, j.current
	j.mu.Unlock()
	ctx, stopCoordinator := context.WithCancel(context.Background())
	coordinated := make(chan struct{})
	var failover error // the coordinator's, read once coordinated is closed
	if j.store != nil {
		go func() {
			defer close(coordinated)
			failover = j.coordinate(ctx, g, ds)
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
		switch {
		case first == nil:
			first = err
			for _, d := range ds {
				d.Cancel(err)
			}
		case consequence(first) && !consequence(err):
			// The failure that tore the channels down, which may reach
			// the JobManager after a channel's end it caused elsewhere.
			first = err
		}
	}
	stopCoordinator()
	<-coordinated
	release()
	if failover != nil {
		return failover
	}
	return first
}

// consequence reports whether err is what a task meets when another part of
// its job failed first: its network channel closed under it, or its context
// cancelled.
func consequence(err error) bool {
	return errors.Is(err, network.ErrChannelClosed) || errors.Is(err, context.Canceled)
}

// ReadView returns the current rows of the job's view task (a materialised
// view's job) as an Arrow IPC stream; after the job ended, its final rows.
func (j *Job) ReadView(now bool) ([]byte, error) {
	j.mu.Lock()
	ds := j.deployments
	j.mu.Unlock()
	for _, d := range ds {
		data, err := d.ReadView(now)
		if errors.Is(err, exec.ErrNoView) {
			continue
		}
		return data, err
	}
	return nil, exec.ErrNoView
}

// Checkpoints returns the job's checkpoint and restart counters.
func (j *Job) Checkpoints() CheckpointStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
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

// Options returns the options the job was submitted with.
func (j *Job) Options() JobOptions { return j.opts }

// DropCheckpoints deletes the checkpoints of j, which has ended, from its
// store: for a job that will not resume (a dropped view's), which would
// otherwise leave them in the data directory for good (TPC-H q15's view:
// 740 KB a run).
func (j *Job) DropCheckpoints(ctx context.Context) error {
	select {
	case <-j.done:
	default:
		return fmt.Errorf("exec: job %s still runs: its checkpoints stay", j.ID)
	}
	if j.opts.CheckpointURL == "" {
		return nil
	}
	store, err := checkpoint.Open(ctx, j.opts.CheckpointURL)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.DropJob(ctx, j.ID)
}

// Failure returns why the job is restarting or waiting for slots, or nil.
func (j *Job) Failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failure
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
func (j *Job) Metrics() map[exec.TaskID]*exec.TaskMetrics {
	j.mu.Lock()
	ds := j.deployments
	j.mu.Unlock()
	m := map[exec.TaskID]*exec.TaskMetrics{}
	for _, d := range ds {
		for id, tm := range d.Metrics() {
			m[id] = tm
		}
	}
	return m
}

// Current returns the current attempt's ExecutionGraph: where its tasks run now.
func (j *Job) Current() *exec.ExecutionGraph {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.current
}

// Attempt returns the number of the current attempt, 0 for the first.
func (j *Job) Attempt() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.attempt
}

// Ended returns when the job stopped, or the zero time while it runs.
func (j *Job) Ended() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ended
}
