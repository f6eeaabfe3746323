package task

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state"
)

// taskCheckpoints is a task's part in checkpointing. Nil when the job takes
// no checkpoints.
type taskCheckpoints struct {
	store   *checkpoint.Store
	job     string
	task    exec.TaskID
	restore int64 // checkpoint to restore from, 0 for none
	acks    func(exec.CheckpointAck)
	// triggers, for a source task, are the checkpoints whose barriers to inject.
	triggers chan int64
	// completes are the checkpoints known complete, for the listeners.
	completes chan int64
	// puts are the task's state writes still running.
	puts sync.WaitGroup
}

// EnableCheckpoints makes the task take part in the checkpoints of job g,
// storing its state in store under its id and answering each barrier to acks;
// it restores from g.RestoreFrom when that is set. Call it before run.
func (t *StreamTask) EnableCheckpoints(store *checkpoint.Store, g *exec.ExecutionGraph, id exec.TaskID, acks func(exec.CheckpointAck)) {
	t.ckpt = &taskCheckpoints{store: store, job: g.JobID, task: id, restore: g.RestoreFrom, acks: acks,
		triggers: make(chan int64, 4), completes: make(chan int64, 16)}
}

// TriggerCheckpoint asks a source task to inject checkpoint id's barrier; other
// tasks get theirs from their inputs and ignore it.
func (t *StreamTask) TriggerCheckpoint(id int64) {
	if t.ckpt != nil && t.source != nil {
		offer(t.ckpt.triggers, id)
	}
}

// CheckpointComplete tells the task that checkpoint id is complete, for its
// CheckpointListeners.
func (t *StreamTask) CheckpointComplete(id int64) {
	if t.ckpt != nil {
		offer(t.ckpt.completes, id)
	}
}

// offer hands id to ch without blocking: a trigger that finds the queue full is
// dropped (its checkpoint times out), and a completion too (the next one covers
// it: listeners treat checkpoint n's completion as covering every one before).
func offer(ch chan int64, id int64) {
	select {
	case ch <- id:
	default:
	}
}

// checkpointed returns the task's stateful parts: the source (index -1) and the
// chain's operators, by position.
func (t *StreamTask) checkpointed() map[int]exec.Checkpointed {
	m := map[int]exec.Checkpointed{}
	if c, ok := t.source.(exec.Checkpointed); ok {
		m[-1] = c
	}
	for i, op := range t.chain {
		if c, ok := op.(exec.Checkpointed); ok {
			m[i] = c
		}
	}
	return m
}

// pendingOp is an operator's snapshot still to finish (exec.AsyncCheckpointed),
// by position in the chain.
type pendingOp struct {
	op     int
	finish exec.PendingState
}

// snapshotOps takes the state of the chain's operators (for a source task, the
// source's was taken before its barrier went out); the final state, as the
// task ends, leaves out the operators whose state then is unread
// (exec.EndStateUnread). For checkpoint id > 0 an AsyncCheckpointed
// operator's snapshot is left pending, for store to finish off the task's
// goroutine; pending is returned even with an error, as each must be
// finished.
func (t *StreamTask) snapshotOps(ctx context.Context, id int64, final bool, st *state.TaskSnapshot) (pending []pendingOp, err error) {
	for i, c := range t.checkpointed() {
		if i < 0 {
			continue
		}
		if _, unread := c.(exec.EndStateUnread); unread && final {
			continue
		}
		if a, ok := c.(exec.AsyncCheckpointed); ok && id > 0 {
			finish, err := a.SnapshotStateAsync(ctx, id)
			if err != nil {
				return pending, fmt.Errorf("snapshot of %s: %w", t.tc.TaskName, err)
			}
			pending = append(pending, pendingOp{op: i, finish: finish})
			continue
		}
		data, err := c.SnapshotState(ctx, id)
		if err != nil {
			return pending, fmt.Errorf("snapshot of %s: %w", t.tc.TaskName, err)
		}
		if st.Ops == nil {
			st.Ops = map[int][]byte{}
		}
		st.Ops[i] = data
	}
	return pending, nil
}

// store finishes the pending snapshots of checkpoint id and writes the task's
// state in the background, then acknowledges it, so that processing goes on
// while files are uploaded and the state is written. An error fails the
// checkpoint (its ack says so), not the task.
func (t *StreamTask) store(ctx context.Context, id int64, st state.TaskSnapshot, pending []pendingOp, align time.Duration, snapErr error) {
	cp := t.ckpt
	cp.puts.Add(1)
	go func() {
		defer cp.puts.Done()
		ctx := context.WithoutCancel(ctx)
		ack := exec.CheckpointAck{Task: cp.task, Checkpoint: id, Align: align}
		err := snapErr
		for _, p := range pending {
			// Each is finished, even after an error: an operator's next
			// checkpoint may wait for this one's.
			blob, uploaded, perr := p.finish(ctx)
			if perr != nil {
				err = cmp.Or(err, fmt.Errorf("snapshot of %s: %w", t.tc.TaskName, perr))
				continue
			}
			if st.Ops == nil {
				st.Ops = map[int][]byte{}
			}
			st.Ops[p.op] = blob
			st.Uploaded += uploaded
		}
		if err == nil && (st.Source != nil || st.Ops != nil) {
			var data []byte
			data, err = st.Marshal()
			if err == nil {
				ack.Bytes = len(data) + int(st.Uploaded)
				err = cp.store.Put(ctx, cp.job, id, state.TaskKey(cp.task), data)
			}
		}
		if err != nil {
			ack.Err = err.Error()
		}
		cp.acks(ack)
	}()
}

// restoreState gives every stateful part its state of the checkpoint the job
// restarts from, after Open and before anything runs.
func (t *StreamTask) restoreState(ctx context.Context) error {
	cp := t.ckpt
	if cp == nil || cp.restore == 0 {
		return nil
	}
	data, err := cp.store.Get(ctx, cp.job, cp.restore, state.TaskKey(cp.task))
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil // the task had no state in that checkpoint
	}
	if err != nil {
		return err
	}
	st, err := state.UnmarshalTaskSnapshot(data)
	if err != nil {
		return fmt.Errorf("restoring %s from checkpoint %d: %w", t.tc.TaskName, cp.restore, err)
	}
	if st.Ended {
		t.ended = true
		data, err = cp.store.GetFinal(ctx, cp.job, state.TaskKey(cp.task))
		if errors.Is(err, checkpoint.ErrNotFound) {
			t.tc.Log.Info("restored as ended", "checkpoint", cp.restore)
			return nil // it ended with no state
		}
		if err != nil {
			return err
		}
		if st, err = state.UnmarshalTaskSnapshot(data); err != nil {
			return fmt.Errorf("restoring %s from its final state: %w", t.tc.TaskName, err)
		}
	}
	for i, c := range t.checkpointed() {
		part := st.Ops[i]
		if i < 0 {
			part = st.Source
		}
		if part == nil {
			continue
		}
		if err := c.RestoreState(ctx, part); err != nil {
			return fmt.Errorf("restoring %s from checkpoint %d: %w", t.tc.TaskName, cp.restore, err)
		}
	}
	t.tc.Log.Info("restored from checkpoint", "checkpoint", cp.restore, "ended", t.ended)
	return nil
}

// storeFinal stores the state the task ended with: a later checkpoint, which
// the task takes no part in, lists it as ended, and a restore from that
// checkpoint gives it this state (a view its rows, a source its position at
// the end) and runs it as ended.
func (t *StreamTask) storeFinal(ctx context.Context) error {
	cp := t.ckpt
	var st state.TaskSnapshot
	if c, ok := t.source.(exec.Checkpointed); ok {
		data, err := c.SnapshotState(ctx, 0)
		if err != nil {
			return fmt.Errorf("final snapshot of %s: %w", t.tc.TaskName, err)
		}
		st.Source = data
	}
	if _, err := t.snapshotOps(ctx, 0, true, &st); err != nil { // checkpoint 0: none pending
		return err
	}
	data, err := st.Marshal()
	if err != nil {
		return err
	}
	return cp.store.PutFinal(context.WithoutCancel(ctx), cp.job, state.TaskKey(cp.task), data)
}

// runEnded runs a task restored as ended: it emitted everything before the
// checkpoint, so it only passes the end of stream on once its inputs (ended
// tasks too) have sent theirs, without its operators, which would otherwise
// emit again what ends produce (a global aggregate's row, a sink's commit).
func (t *StreamTask) runEnded(ctx context.Context) error {
	total := 0
	for _, n := range t.channels {
		total += n
	}
	for ended := 0; ended < total; {
		select {
		case m := <-t.inbox:
			if m.IsData() {
				m.Batch.Rec.Release()
				return fmt.Errorf("task %s was restored as ended, but got rows", t.tc.TaskName)
			}
			if m.Signal.Kind == exec.EndOfStream {
				ended++
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if t.late != nil {
		if err := t.late.CollectSignal(ctx, exec.Signal{Kind: exec.EndOfStream}); err != nil {
			return err
		}
	}
	return t.out.CollectSignal(ctx, exec.Signal{Kind: exec.EndOfStream})
}

// notifyComplete tells the task's listeners that checkpoint id is complete.
func (t *StreamTask) notifyComplete(ctx context.Context, id int64) error {
	if l, ok := t.source.(exec.CheckpointListener); ok {
		if err := l.NotifyCheckpointComplete(ctx, id); err != nil {
			return err
		}
	}
	for _, op := range t.chain {
		if l, ok := op.(exec.CheckpointListener); ok {
			if err := l.NotifyCheckpointComplete(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// sourceCheckpoints runs beside a source task's Run: it injects the barriers of
// triggered checkpoints and tells listeners of completed ones, holding emit (the
// lock every batch of the source goes downstream under) so that the source's
// position, the barrier and the operators' states all sit between two batches.
func (t *StreamTask) sourceCheckpoints(ctx context.Context, emit *sync.Mutex, head exec.Collector, ended *bool) error {
	cp := t.ckpt
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-cp.triggers:
			emit.Lock()
			if *ended {
				emit.Unlock()
				continue
			}
			var st state.TaskSnapshot
			var pending []pendingOp
			var err error
			if c, ok := t.source.(exec.Checkpointed); ok {
				st.Source, err = c.SnapshotState(ctx, id)
			}
			if err == nil {
				if err = head.CollectSignal(ctx, exec.Signal{Kind: exec.Barrier, Checkpoint: id}); err != nil {
					emit.Unlock()
					return err
				}
				pending, err = t.snapshotOps(ctx, id, false, &st)
			}
			emit.Unlock()
			t.store(ctx, id, st, pending, 0, err)
		case id := <-cp.completes:
			emit.Lock()
			err := t.notifyComplete(ctx, id)
			emit.Unlock()
			if err != nil {
				return err
			}
		}
	}
}

// lockedCollector emits a source's batches under its task's emission lock.
type lockedCollector struct {
	mu   *sync.Mutex
	next exec.Collector
}

func (c *lockedCollector) Collect(ctx context.Context, b exec.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next.Collect(ctx, b)
}

func (c *lockedCollector) CollectSignal(ctx context.Context, s exec.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next.CollectSignal(ctx, s)
}
