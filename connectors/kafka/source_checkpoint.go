package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hummer-db/hummer/exec"
)

// The source's part in checkpoints (exec/checkpoint.go): its state is the
// offset, in each of its partitions, of the first record not yet handed
// downstream; a job restarting from a checkpoint reads from there, whatever
// the group or start options say. With checkpoints, the group's offsets are
// committed only when a checkpoint completes, so the group never runs ahead of
// what the job would restart from.

var (
	_ exec.Checkpointed       = (*source)(nil)
	_ exec.CheckpointListener = (*source)(nil)
)

// sourceStateVersion is the version of sourceState's encoding.
const sourceStateVersion = 1

// sourceState is what SnapshotState returns, as JSON.
type sourceState struct {
	Version int    `json:"version"`
	Topic   string `json:"topic"`
	// Offsets holds, by partition, the offset of the first record not handed
	// downstream.
	Offsets map[int]int64 `json:"offsets"`
	// Marks holds, for a table with a WATERMARK, each partition's watermark
	// as of those offsets (watermarks.go), so that after a restart a
	// partition with nothing more to read does not hold the watermark back.
	Marks map[int]int64 `json:"marks,omitempty"`
}

// maxPendingSnapshots bounds the snapshots a source keeps for checkpoints
// not yet known complete. A checkpoint's completion covers every one before
// it, so when checkpoints fail for long, dropping the oldest loses nothing but
// an earlier commit.
const maxPendingSnapshots = 16

// positions is where a source subtask stands in each of its partitions: the
// offset after the last record of the batches handed downstream (or that gave
// no rows). Run moves it, under the task's checkpoint lock together with the
// batch it covers (exec.TaskContext.CheckpointLock); SnapshotState, called
// with that lock held, reads it from the task's checkpointing goroutine.
type positions struct {
	mu   sync.Mutex
	done map[int]int64
	// waiting is set while Run waits for the checkpoint lock (for tests).
	waiting atomic.Bool
}

// reset makes offsets the position, as Run starts reading.
func (p *positions) reset(offsets map[int]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = maps.Clone(offsets)
}

// advance moves the position past the records before offsets.
func (p *positions) advance(offsets map[int]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = map[int]int64{}
	}
	maps.Copy(p.done, offsets)
}

// snapshot returns the position.
func (p *positions) snapshot() map[int]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.done)
}

// inFlight reports whether Run waits to emit a batch (for tests).
func (p *positions) inFlight() bool { return p.waiting.Load() }

// pendingSnapshots are the offsets snapshotted for checkpoints not yet known
// complete, by checkpoint. SnapshotState adds to them and
// NotifyCheckpointComplete takes from them, from any goroutine.
type pendingSnapshots struct {
	mu    sync.Mutex
	byID  map[int64]map[int]int64
	order []int64 // the checkpoints of byID, oldest first
}

func (ps *pendingSnapshots) add(id int64, offsets map[int]int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.byID == nil {
		ps.byID = map[int64]map[int]int64{}
	}
	if _, ok := ps.byID[id]; !ok {
		ps.order = append(ps.order, id)
		slices.Sort(ps.order)
	}
	ps.byID[id] = offsets
	for len(ps.order) > maxPendingSnapshots {
		delete(ps.byID, ps.order[0])
		ps.order = ps.order[1:]
	}
}

// take returns the offsets of the latest checkpoint up to id, or nil if there
// is none, and forgets every checkpoint up to id: id's completion covers them.
func (ps *pendingSnapshots) take(id int64) map[int]int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var offsets map[int]int64
	n := 0
	for _, c := range ps.order {
		if c > id {
			break
		}
		offsets = ps.byID[c]
		delete(ps.byID, c)
		n++
	}
	ps.order = ps.order[n:]
	return offsets
}

// SnapshotState returns, as JSON, the offset in each of the subtask's
// partitions of the first record it has not handed downstream. The task calls
// it holding the source's emission, from another goroutine than Run's; see
// positions.snapshot for what the position covers. Before Run has listed its
// partitions it returns what RestoreState gave, if anything.
func (s *source) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	offsets := s.pos.snapshot()
	if s.progress != nil && s.tc != nil && s.tc.Checkpointing {
		s.snaps.add(checkpoint, offsets)
	}
	marks := s.restoredMarks
	if s.marks != nil { // Run's, which moves them under the lock SnapshotState is called with
		marks = maps.Clone(s.marks.high)
	}
	return json.Marshal(sourceState{Version: sourceStateVersion, Topic: s.cfg.topic, Offsets: offsets, Marks: marks})
}

// RestoreState makes Run start each partition data names at the offset it
// gives, whatever the group and start options say; partitions it does not
// name (new ones, or another subtask's) start as without it. It is called
// after Open and before Run.
func (s *source) RestoreState(ctx context.Context, data []byte) error {
	var st sourceState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("kafka: restoring the source of topic %s: %w", s.cfg.topic, err)
	}
	switch {
	case st.Version != sourceStateVersion:
		return fmt.Errorf("kafka: restoring the source of topic %s: state version %d, this release reads version %d", s.cfg.topic, st.Version, sourceStateVersion)
	case st.Topic != s.cfg.topic:
		return fmt.Errorf("kafka: restoring the source of topic %s: the state is of topic %s", s.cfg.topic, st.Topic)
	}
	for p, o := range st.Offsets {
		if p < 0 || o < 0 {
			return fmt.Errorf("kafka: restoring the source of topic %s: bad offset %d of partition %d", s.cfg.topic, o, p)
		}
	}
	s.restored, s.restoredMarks = st.Offsets, st.Marks
	s.pos.reset(st.Offsets)
	return nil
}

// NotifyCheckpointComplete commits to the group, with the group option and
// checkpoints, the offsets SnapshotState gave for checkpoint (or for the
// latest checkpoint before it that it has). It may run concurrently with Run.
func (s *source) NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error {
	if s.progress == nil || s.tc == nil || !s.tc.Checkpointing {
		return nil
	}
	offsets := s.snaps.take(checkpoint)
	if len(offsets) == 0 {
		return nil
	}
	if err := s.progress.commit(ctx, offsets); err != nil {
		return fmt.Errorf("kafka: committing the offsets of checkpoint %d to group %s: %w", checkpoint, s.cfg.group, err)
	}
	return nil
}
