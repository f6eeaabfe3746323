package jobmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// stagingSink stages as connectors/table's sink does on a TaskManager
// without the store: numbers between two barriers are an interval named by
// the later checkpoint (finalState's at the end); its state is every
// interval it has not heard committed; it commits nothing itself.
type stagingSink struct {
	subtaskTagger
	pending []int64
	staged  []stagedInterval
}

type stagedInterval struct {
	Checkpoint int64   `json:"checkpoint"`
	Numbers    []int64 `json:"numbers"`
}

const finalState = math.MaxInt64

func (o *stagingSink) ProcessBatch(_ context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	o.pending = append(o.pending, b.Rec.Column(0).(*array.Int64).Int64Values()...)
	return nil
}

func (o *stagingSink) ProcessSignal(context.Context, int, exec.Signal, exec.Collector) error {
	return nil
}

func (o *stagingSink) SnapshotState(_ context.Context, id int64) ([]byte, error) {
	if id == 0 {
		id = finalState
	}
	if len(o.pending) > 0 {
		o.staged = append(o.staged, stagedInterval{id, o.pending})
		o.pending = nil
	}
	return json.Marshal(struct {
		Checkpoint int64            `json:"checkpoint"`
		Intervals  []stagedInterval `json:"intervals"`
	}{id, o.staged})
}

func (o *stagingSink) NotifyCheckpointComplete(_ context.Context, id int64) error {
	for len(o.staged) > 0 && o.staged[0].Checkpoint <= id {
		o.staged = o.staged[1:]
	}
	return nil
}

func (o *stagingSink) RestoreState(context.Context, []byte) error { return nil }

func (o *stagingSink) Close(context.Context) error { return nil }

// stagedTable is where the committer of the "staged" sinks commits: each
// number's count, and by sink subtask the checkpoint last committed, which
// makes a commit idempotent (as version.Sinks does for a stored table).
type stagedTable struct {
	mu        sync.Mutex
	counts    map[int64]int
	committed map[int]int64
	commits   []int64 // the checkpoints committed (or tried), in order
	// failAt fails the commit of that checkpoint, once.
	failAt atomic.Int64
}

func (s *stagedTable) commit(_ context.Context, job string, staged []StagedSink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range staged {
		if st.Sink.Connector != "staged" {
			return fmt.Errorf("committer of %q given a sink of %q", "staged", st.Sink.Connector)
		}
		var state struct {
			Checkpoint int64
			Intervals  []stagedInterval
		}
		if err := json.Unmarshal(st.State, &state); err != nil {
			return err
		}
		s.commits = append(s.commits, state.Checkpoint)
		if state.Checkpoint == s.failAt.Load() && s.failAt.CompareAndSwap(state.Checkpoint, -1) {
			return errors.New("store on fire")
		}
		done := s.committed[st.Task.Subtask]
		if done >= state.Checkpoint {
			continue
		}
		for _, iv := range state.Intervals {
			if iv.Checkpoint > done {
				for _, n := range iv.Numbers {
					s.counts[n]++
				}
			}
		}
		s.committed[st.Task.Subtask] = state.Checkpoint
	}
	return nil
}

// exactlyOnce reports whether every number below total is committed once,
// and a number committed twice (-1 if none).
func (s *stagedTable) exactlyOnce(total int64) (bool, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, c := range s.counts {
		if c > 1 {
			return false, n
		}
	}
	return int64(len(s.counts)) == total, -1
}

func stagedJob(w *ckptTest, table *stagedTable) (*exec.Registry, *exec.JobGraph) {
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterSink("staged", func(exec.ConnectorSpec) (exec.Operator, error) { return &stagingSink{}, nil })
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "src", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "source", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})}}},
			{ID: 1, Name: "sink", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "sink", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "staged", Schema: n})}}},
		},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}}},
	}
	return reg, job
}

// TestCommitSinksAfterRestore: the JobManager commits the states of the
// sinks it commits as checkpoints complete; a commit that fails (with
// FailoverAfter 1, failing the attempt over) leaves a checkpoint complete
// but uncommitted, which the next attempt, restored from it, commits
// before it runs. Every number is committed exactly once.
func TestCommitSinksAfterRestore(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 3000, committed: map[[2]int64][]int64{}}
	w.failAt.Store(-1)
	table := &stagedTable{counts: map[int64]int{}, committed: map[int]int64{}}
	table.failAt.Store(4)
	reg, job := stagedJob(w, table)
	jm := New(nil)
	jm.CommitSinks("staged", table.commit)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm", Slots: 4, Registry: reg, Alloc: mem}))
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + filepath.Join(t.TempDir(), "ckpt"),
		CheckpointInterval: 10 * time.Millisecond, FailoverAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		done, dup := table.exactlyOnce(w.total)
		if dup >= 0 {
			t.Fatalf("number %d committed twice", dup)
		}
		if done && j.Checkpoints().Restarts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every number committed once: checkpoints %+v, state %s", j.Checkpoints(), j.State())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	st := j.Checkpoints()
	if st.RestoredFrom != 4 {
		t.Errorf("restored from checkpoint %d, want 4, whose commit failed", st.RestoredFrom)
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	tried := 0
	for _, c := range table.commits {
		if c == 4 {
			tried++
		}
	}
	// Both subtasks' states of checkpoint 4: the first failed the commit
	// as the checkpoint completed; the restored attempt committed both.
	if tried < 2 {
		t.Errorf("checkpoint 4 committed %d times (commits %v), want again after the restore", tried, table.commits)
	}
}

// TestCommitSinksAtEnd: a job whose input ends has its sinks' final states,
// what they took after their last checkpoint, committed as it finishes.
func TestCommitSinksAtEnd(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 2000, committed: map[[2]int64][]int64{}, ends: true}
	w.failAt.Store(-1)
	table := &stagedTable{counts: map[int64]int{}, committed: map[int]int64{}}
	table.failAt.Store(-1)
	reg, job := stagedJob(w, table)
	jm := New(nil)
	jm.CommitSinks("staged", table.commit)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm", Slots: 4, Registry: reg, Alloc: mem}))
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + filepath.Join(t.TempDir(), "ckpt"),
		CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-j.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the job did not finish: %s", j.State())
	}
	if j.State() != JobFinished {
		t.Fatalf("job %s: %v", j.State(), j.Err())
	}
	done, dup := table.exactlyOnce(w.total)
	if !done || dup >= 0 {
		table.mu.Lock()
		defer table.mu.Unlock()
		t.Fatalf("%d of %d numbers committed (one twice: %d); commits %v", len(table.counts), w.total, dup, table.commits)
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	if last := table.commits[len(table.commits)-1]; last != finalState {
		t.Errorf("last commit of checkpoint %d, want the final states'", last)
	}
}
