package jobmanager

import (
	"context"
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
}

// coordinate is the checkpoint coordinator of one attempt: every interval it
// triggers a checkpoint (one at a time), collects the tasks' acknowledgements,
// marks the checkpoint complete in the store once every task stored its state,
// tells the tasks, and keeps the last few checkpoints.
func (j *Job) coordinate(ctx context.Context, ds []*exec.Deployment) {
	const keep = 3
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
		cur = &pending{id: id, started: time.Now(), acked: map[exec.TaskID]bool{}}
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
			var ended []exec.TaskID
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
// task.StreamTask.storeFinal).
func (j *Job) markEnded(ctx context.Context, id int64, ended []exec.TaskID) error {
	for _, t := range ended {
		if err := j.store.Put(ctx, j.ID, id, state.TaskKey(t), state.EndedMarker); err != nil {
			return err
		}
	}
	return nil
}
