package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state"
)

// Sinks the JobManager commits.
//
// A sink that writes where only the JobManager's process reaches (a table
// Hummer stores, whose store is in the process that holds the catalog:
// connectors/table) cannot commit from a TaskManager of another process. It
// stages instead: what it took before a checkpoint's barrier, and has not
// heard committed, is its state in that checkpoint, in the checkpoint store
// that the JobManager reaches too. The JobManager commits those states
// through the SinkCommitter registered for the sink's connector (CommitSinks):
//
//   - when checkpoint n is complete in the store, before the tasks hear so.
//     A commit that fails counts the checkpoint as failed and the tasks are
//     not told: the next checkpoint's states still hold what n's did;
//   - before an attempt restored from checkpoint n is deployed: n may have
//     completed without its commit (a JobManager killed between the two, or
//     a commit that failed);
//   - as the job finishes, with the states its tasks ended with.
//
// So every complete checkpoint but the newest is committed before the next
// one is triggered, and the newest before the job runs on from it. The same
// state may be committed twice (a JobManager killed after a commit, before
// it triggered the next checkpoint): a SinkCommitter must change nothing the
// second time.

// SinkCommitter commits what the sinks of one connector staged in their
// states of one checkpoint of job (or in the states their tasks ended with),
// idempotently.
type SinkCommitter func(ctx context.Context, job string, staged []StagedSink) error

// StagedSink is a sink subtask's state: what its SnapshotState returned.
type StagedSink struct {
	Sink  exec.ConnectorSpec
	Task  exec.TaskID
	State []byte
}

// CommitSinks has the JobManager commit the states of the sinks of
// connector through c, for every job it runs with checkpoints.
func (jm *JobManager) CommitSinks(connector string, c SinkCommitter) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.committers == nil {
		jm.committers = map[string]SinkCommitter{}
	}
	jm.committers[connector] = c
}

// commitSinks commits the states of g's sinks in checkpoint id, or with id
// 0 the states their tasks ended with, through the registered committers.
func (j *Job) commitSinks(ctx context.Context, g *exec.ExecutionGraph, id int64) error {
	j.jm.mu.Lock()
	committers := maps.Clone(j.jm.committers)
	j.jm.mu.Unlock()
	if len(committers) == 0 || j.store == nil {
		return nil
	}
	type sinkOp struct {
		op   int // position in the task's chain of operators (after a source)
		spec exec.ConnectorSpec
	}
	staged := map[string][]StagedSink{}
	for _, et := range g.Tasks {
		v := g.Job.Vertices[et.ID.Vertex]
		var sinks []sinkOp
		for p, spec := range v.Chain {
			if spec.Kind != "sink" {
				continue
			}
			c, err := exec.DecodeConnector(spec)
			if err != nil {
				return err
			}
			if committers[c.Connector] == nil {
				continue
			}
			op := p
			if v.IsSource() {
				op-- // a task's operators follow its source
			}
			sinks = append(sinks, sinkOp{op: op, spec: c})
		}
		if len(sinks) == 0 {
			continue
		}
		st, ok, err := j.taskState(ctx, et.ID, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for _, s := range sinks {
			if part := st.Ops[s.op]; part != nil {
				staged[s.spec.Connector] = append(staged[s.spec.Connector], StagedSink{Sink: s.spec, Task: et.ID, State: part})
			}
		}
	}
	for conn, ss := range staged {
		if err := committers[conn](ctx, j.ID, ss); err != nil {
			what := fmt.Sprintf("checkpoint %d", id)
			if id == 0 {
				what = "the end"
			}
			return fmt.Errorf("committing the %s sinks' states of %s: %w", conn, what, err)
		}
	}
	return nil
}

// taskState returns task's state in checkpoint id, or the state it ended
// with when id is 0 or the task had ended before checkpoint id; ok is false
// when there is none.
func (j *Job) taskState(ctx context.Context, task exec.TaskID, id int64) (st state.TaskSnapshot, ok bool, err error) {
	key := state.TaskKey(task)
	if id > 0 {
		data, err := j.store.Get(ctx, j.ID, id, key)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return st, false, nil
		}
		if err != nil {
			return st, false, err
		}
		if st, err = state.UnmarshalTaskSnapshot(data); err != nil {
			return st, false, fmt.Errorf("state of task %s in checkpoint %d: %w", key, id, err)
		}
		if !st.Ended {
			return st, true, nil
		}
	}
	data, err := j.store.GetFinal(ctx, j.ID, key)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if st, err = state.UnmarshalTaskSnapshot(data); err != nil {
		return st, false, fmt.Errorf("final state of task %s: %w", key, err)
	}
	return st, true, nil
}
