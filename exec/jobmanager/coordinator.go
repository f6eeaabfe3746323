package jobmanager

import (
	"context"
	"fmt"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
)

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
	// LastFailure says why the newest failed checkpoint failed ("" when none
	// has), and FailedInARow how many have failed since the last that
	// completed.
	LastFailure  string
	FailedInARow int
}

// CheckpointRecord is one checkpoint's outcome, for the dashboard's history and
// the metrics' histograms.
type CheckpointRecord struct {
	ID       int64
	Started  time.Time
	Duration time.Duration // from trigger to complete, or to the failure
	Bytes    int64         // state stored (complete ones)
	Align    time.Duration // longest barrier alignment of a task
	// Failure says why the checkpoint failed; "" when it completed.
	Failure string
}

// historyLength is how many checkpoints Job.CheckpointHistory keeps.
const historyLength = 20

// record adds r to the job's history and tells the JobManager's observer.
// Lock should be held.
func (j *Job) record(r CheckpointRecord) {
	if len(j.history) == historyLength {
		j.history = append(j.history[:0], j.history[1:]...)
	}
	j.history = append(j.history, r)
	if f := j.jm.observer.Load(); f != nil {
		(*f)(j, r)
	}
}

// CheckpointHistory returns the job's last checkpoints, oldest first.
func (j *Job) CheckpointHistory() []CheckpointRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]CheckpointRecord(nil), j.history...)
}

// OnCheckpoint has f told of every checkpoint of every job as it completes
// or fails (for metrics); f is called with the job's lock held, so it must
// not call the job's methods. A second call replaces the first f.
func (jm *JobManager) OnCheckpoint(f func(*Job, CheckpointRecord)) { jm.observer.Store(&f) }

// coordinate is the checkpoint coordinator of one attempt: every interval it
// triggers a checkpoint (one at a time), collects the tasks' acknowledgements,
// marks the checkpoint complete in the store once every task stored its state,
// commits what the sinks the JobManager commits staged in it (commit.go),
// tells the tasks, and keeps the last few checkpoints. A checkpoint that a
// task declines, that the store does not complete or that times out is
// counted as failed, with its reason (CheckpointStats); after FailoverAfter
// in a row it cancels the attempt's deployments and returns why, so that the
// job restarts from its last complete checkpoint. Otherwise it runs until ctx
// is done and returns nil.
func (j *Job) coordinate(ctx context.Context, g *exec.ExecutionGraph, ds []*exec.Deployment) error {
	const keep = 3
	failoverAfter := j.opts.FailoverAfter
	if failoverAfter <= 0 {
		failoverAfter = DefaultFailoverAfter
	}
	timeout := max(10*j.opts.CheckpointInterval, 10*time.Second)
	tasks := 0
	for _, d := range ds {
		tasks += len(d.Metrics())
	}
	acks := make(chan exec.CheckpointAck)
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
		acked   map[exec.TaskID]bool
		bytes   int64
		align   time.Duration
	}
	var cur *pending
	finished := map[exec.TaskID]bool{} // tasks that ended: no barrier reaches them
	tick := time.NewTicker(j.opts.CheckpointInterval)
	defer tick.Stop()
	// fail counts the current checkpoint as failed for reason, and returns
	// the error to fail the attempt over with once too many have in a row.
	fail := func(reason string) error {
		j.jm.log.Warn("checkpoint failed", "job", j.ID, "checkpoint", cur.id, "reason", reason)
		j.mu.Lock()
		j.stats.Failed++
		j.stats.FailedInARow++
		j.stats.LastFailure = fmt.Sprintf("checkpoint %d: %s", cur.id, reason)
		j.record(CheckpointRecord{ID: cur.id, Started: cur.started, Duration: time.Since(cur.started),
			Align: cur.align, Failure: reason})
		n := j.stats.FailedInARow
		j.mu.Unlock()
		cur = nil
		if n < failoverAfter {
			return nil
		}
		err := fmt.Errorf("%d checkpoints in a row failed (tolerable_failed_checkpoints = %d), the last: %s",
			n, failoverAfter-1, reason)
		for _, d := range ds {
			d.Cancel(err)
		}
		return err
	}
	// trigger starts the next checkpoint, unless one is still under way.
	trigger := func() error {
		if cur != nil {
			if time.Since(cur.started) < timeout {
				return nil // one checkpoint at a time
			}
			if err := fail(fmt.Sprintf("timed out after %s, %d of %d tasks acknowledged", timeout, len(cur.acked), tasks)); err != nil {
				return err
			}
		}
		j.mu.Lock()
		id := max(j.stats.Last, j.lastTriggered) + 1
		j.lastTriggered = id
		j.mu.Unlock()
		cur = &pending{id: id, started: time.Now(), acked: map[exec.TaskID]bool{}}
		for _, d := range ds {
			d.TriggerCheckpoint(id)
		}
		return nil
	}
	if j.opts.CheckpointAtStart {
		if err := trigger(); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := trigger(); err != nil {
				return err
			}
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
				if err := fail(fmt.Sprintf("task %s declined: %s", a.Task, a.Err)); err != nil {
					return err
				}
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
			var ended []exec.TaskID
			for t := range finished {
				if !cur.acked[t] {
					ended = append(ended, t)
				}
			}
			if len(cur.acked)+len(ended) < tasks {
				continue
			}
			err := j.markEnded(ctx, cur.id, ended)
			if err == nil {
				err = j.store.Complete(ctx, j.ID, cur.id)
			}
			if ctx.Err() != nil {
				return nil // the attempt ended meanwhile
			}
			if err != nil {
				if err := fail("not completed in the store: " + err.Error()); err != nil {
					return err
				}
				continue
			}
			// The tasks hear of the checkpoint only once its sinks' states
			// are committed: a staging sink forgets what it heard committed.
			if err := j.commitSinks(ctx, g, cur.id); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if err := fail("complete, but not committed: " + err.Error()); err != nil {
					return err
				}
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
			j.stats.FailedInARow = 0
			j.record(CheckpointRecord{ID: cur.id, Started: cur.started, Duration: j.stats.LastDuration,
				Bytes: cur.bytes, Align: cur.align})
			j.mu.Unlock()
			if err := j.store.Prune(ctx, j.ID, keep); err != nil {
				j.jm.log.Warn("pruning checkpoints", "job", j.ID, "err", err)
			}
			cur = nil
		}
	}
}

// markEnded stores, in checkpoint id, that the tasks ended before it (see
// task.StreamTask.storeFinal).
func (j *Job) markEnded(ctx context.Context, id int64, ended []exec.TaskID) error {
	for _, t := range ended {
		if err := j.store.Put(ctx, j.ID, id, state.TaskKey(t), state.EndedMarker); err != nil {
			return err
		}
	}
	return nil
}
