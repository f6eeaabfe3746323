package jobmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// ckptTest is the shared world of TestCheckpointRestart's operators.
type ckptTest struct {
	total  int64        // numbers each source subtask emits: subtask, subtask+par, ...
	failAt atomic.Int64 // a "failonce" operator fails when it sees this number (once)
	failed atomic.Bool
	mu     sync.Mutex
	// committed holds the numbers of each committed epoch, by sink subtask
	// and checkpoint: committing an epoch again changes nothing (as a Kafka
	// transaction committed twice).
	committed map[[2]int64][]int64
	// atEnd holds the numbers sinks committed at their end of stream, which
	// no checkpoint follows (as the Kafka sink's finish).
	atEnd    []int64
	restored atomic.Int64 // sinks and sources that restored a state
	// declining makes every sink's SnapshotState fail.
	declining atomic.Bool
	// ends makes the sources end once they emitted their numbers; they
	// wait to be cancelled otherwise.
	ends bool
}

// ckptSource emits its subtask's numbers in batches of 7, then waits to be
// cancelled (an unbounded source); its position is the next number.
type ckptSource struct {
	w    *ckptTest
	tc   *exec.TaskContext
	next atomic.Int64
}

func (s *ckptSource) Open(_ context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	s.next.Store(int64(tc.Subtask))
	return nil
}

func (s *ckptSource) Run(ctx context.Context, out exec.Collector) error {
	step := int64(s.tc.Parallelism)
	for {
		var vals []int64
		n := s.next.Load()
		for ; n < s.w.total && len(vals) < 7; n += step {
			vals = append(vals, n)
		}
		if len(vals) == 0 {
			if !s.w.ends {
				<-ctx.Done()
			}
			return nil
		}
		b := array.NewInt64Builder(s.tc.Alloc)
		b.AppendValues(vals, nil)
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil),
			[]arrow.Array{col}, int64(len(vals)))
		col.Release()
		// The position moves and the batch goes out under the checkpoint lock.
		s.tc.CheckpointLock.Lock()
		s.next.Store(n)
		err := out.Collect(ctx, exec.Batch{Rec: rec})
		s.tc.CheckpointLock.Unlock()
		rec.Release()
		if err != nil {
			return err
		}
		select {
		case <-time.After(time.Millisecond): // a stream, not a flood
		case <-ctx.Done():
			return nil
		}
	}
}

func (s *ckptSource) Close() error { return nil }

func (s *ckptSource) SnapshotState(context.Context, int64) ([]byte, error) {
	return json.Marshal(s.next.Load())
}

func (s *ckptSource) RestoreState(_ context.Context, data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	s.next.Store(n)
	s.w.restored.Add(1)
	return nil
}

// ckptSink is a transactional sink in miniature: numbers since the last
// barrier are pending; a barrier closes them into the checkpoint's epoch; a
// completed checkpoint commits its epoch and older ones. Its state is the
// epochs not yet committed; restored from checkpoint n it commits those of n
// and before (the notification of n may have been lost with the failure).
type ckptSink struct {
	subtaskTagger
	w       *ckptTest
	pending []int64
	epochs  map[int64][]int64
}

func (o *ckptSink) ProcessBatch(_ context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	vals := b.Rec.Column(0).(*array.Int64).Int64Values()
	for _, v := range vals {
		if v == o.w.failAt.Load() && o.w.failed.CompareAndSwap(false, true) {
			return fmt.Errorf("injected failure at %d", v)
		}
	}
	o.pending = append(o.pending, vals...)
	return nil
}

func (o *ckptSink) ProcessSignal(_ context.Context, _ int, s exec.Signal, _ exec.Collector) error {
	if s.Kind == exec.EndOfStream {
		o.w.mu.Lock()
		o.w.atEnd = append(o.w.atEnd, o.pending...)
		o.w.mu.Unlock()
		o.pending = nil
	}
	if s.Kind == exec.Barrier {
		if o.epochs == nil {
			o.epochs = map[int64][]int64{}
		}
		o.epochs[s.Checkpoint] = o.pending
		o.pending = nil
	}
	return nil
}

func (o *ckptSink) commit(id int64) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	for e, vals := range o.epochs {
		if e <= id {
			o.w.committed[[2]int64{int64(o.tc.Subtask), e}] = vals
			delete(o.epochs, e)
		}
	}
}

func (o *ckptSink) NotifyCheckpointComplete(_ context.Context, id int64) error {
	o.commit(id)
	return nil
}

func (o *ckptSink) SnapshotState(context.Context, int64) ([]byte, error) {
	if o.w.declining.Load() {
		return nil, errors.New("disk on fire")
	}
	return json.Marshal(o.epochs)
}

func (o *ckptSink) RestoreState(_ context.Context, data []byte) error {
	if err := json.Unmarshal(data, &o.epochs); err != nil {
		return err
	}
	o.w.restored.Add(1)
	// Restored from a complete checkpoint: all its epochs are committed.
	o.commit(1 << 62)
	return nil
}

// TestCheckpointRestart: a job of two sources (hash edge) into two sinks with
// checkpoints every 20ms, on two TaskManagers; a sink fails once mid-stream.
// The job restarts from its last complete checkpoint and, in the end, every
// number is committed exactly once: those committed before the failure were
// covered by the checkpoint the sources rewound to, those after it are
// committed by the new attempt.
func TestCheckpointRestart(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 2000, committed: map[[2]int64][]int64{}}
	w.failAt.Store(1234)
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterOperator("ckpt_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &ckptSink{w: w}, nil })
	jm := New(nil)
	for i := range 2 {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer data.Close()
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: fmt.Sprint("tm", i), Slots: 2, Registry: reg, Alloc: mem, Data: data}))
	}
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "src", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "source", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})}}},
			{ID: 1, Name: "sink", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "ckpt_sink", Out: n}}},
		},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}}},
	}
	url := "file://" + filepath.Join(t.TempDir(), "ckpt")
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: url, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()
	committed := func() (distinct int, dup int64) {
		w.mu.Lock()
		defer w.mu.Unlock()
		seen := map[int64]bool{}
		for _, vals := range w.committed {
			for _, v := range vals {
				if seen[v] {
					dup = v
				}
				seen[v] = true
			}
		}
		return len(seen), dup
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		distinct, dup := committed()
		if dup != 0 {
			t.Fatalf("number %d committed twice", dup)
		}
		if distinct == int(w.total) {
			break
		}
		select {
		case <-j.Done():
			t.Fatalf("the job ended: %v", j.Err())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d numbers committed; checkpoints %+v", distinct, w.total, j.Checkpoints())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	st := j.Checkpoints()
	if !w.failed.Load() || st.Restarts != 1 || w.restored.Load() == 0 {
		t.Errorf("failed=%v restarts=%d restored=%d; want one restart from a checkpoint", w.failed.Load(), st.Restarts, w.restored.Load())
	}
	if st.Completed == 0 || st.RestoredFrom == 0 {
		t.Errorf("checkpoint stats %+v", st)
	}
}

// TestCheckpointsAfterTasksFinish: tasks whose input ended (a bounded source
// beside a stream) take no part in later checkpoints, which complete without
// them; when the stream's part then fails, the job restarts with them ended:
// the bounded source does not emit its row again.
func TestCheckpointsAfterTasksFinish(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 1 << 40, committed: map[[2]int64][]int64{}}
	w.failAt.Store(5000)
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterOperator("ckpt_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &ckptSink{w: w}, nil })
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm", Slots: 2, Registry: reg, Alloc: mem}))
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "stream", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "source", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})}}},
			{ID: 1, Name: "sink", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "ckpt_sink", Out: n}}},
			{ID: 2, Name: "bounded", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "values", Out: n,
				Config: exec.MustConfig(operators.ValuesConfig{Rows: [][]types.Value{{types.IntValue(-5)}}})}}},
			{ID: 3, Name: "sink2", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "ckpt_sink", Out: n}}},
		},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Forward}}, {From: 2, To: 3, Partition: exec.Partition{Kind: exec.Forward}}},
	}
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + filepath.Join(t.TempDir(), "ckpt"),
		CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := j.Checkpoints()
		if st.Restarts == 1 && st.Completed >= 3 && st.Last > st.RestoredFrom+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoints %+v: want 3 completed, a restart, then 3 more", st)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	if !w.failed.Load() {
		t.Fatal("the stream's sink never failed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.atEnd) != 1 || w.atEnd[0] != -5 {
		t.Errorf("the bounded branch's sink took %v at its end, want [-5] once: restored from checkpoint %d, it ran again",
			w.atEnd, j.Checkpoints().RestoredFrom)
	}
}

// endlessCkptJob returns the world, the registry and the graph of a job of one
// endless ckpt source into one ckpt_sink, that never fails by itself.
func endlessCkptJob() (*ckptTest, *exec.Registry, *exec.JobGraph) {
	w := &ckptTest{total: 1 << 40, committed: map[[2]int64][]int64{}}
	w.failAt.Store(-1)
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterOperator("ckpt_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &ckptSink{w: w}, nil })
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "src", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "source", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})}}},
			{ID: 1, Name: "sink", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "ckpt_sink", Out: n}}},
		},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Forward}}},
	}
	return w, reg, job
}

// TestFailedCheckpointsFailOver: a checkpoint a task declines is counted with
// its reason; FailoverAfter of them in a row fail the job over, which says
// why while it restarts from its last complete checkpoint; once the task no
// longer declines, checkpoints complete again and the failures in a row are
// counted afresh.
func TestFailedCheckpointsFailOver(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w, reg, job := endlessCkptJob()
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm", Slots: 2, Registry: reg, Alloc: mem}))
	var restarts atomic.Int64
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + filepath.Join(t.TempDir(), "ckpt"),
		CheckpointInterval: 10 * time.Millisecond, FailoverAfter: 2, Restarts: 5,
		OnRestart: func(*Job) { restarts.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()
	waitFor := func(what string, cond func(CheckpointStats) bool) CheckpointStats {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := j.Checkpoints()
			if cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: checkpoints %+v, state %s, failure %v", what, st, j.State(), j.Failure())
			}
			time.Sleep(2 * time.Millisecond) // polling a condition with a deadline
		}
	}
	before := waitFor("two checkpoints", func(st CheckpointStats) bool { return st.Completed >= 2 })
	if before.Failed != 0 || before.LastFailure != "" || before.Restarts != 5 {
		t.Fatalf("before any failure: %+v (want 5 restarts, those of earlier runs)", before)
	}
	w.declining.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for j.State() != JobRestarting {
		if time.Now().After(deadline) {
			t.Fatalf("never restarting: state %s, checkpoints %+v", j.State(), j.Checkpoints())
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	if err := j.Failure(); err == nil || !strings.Contains(err.Error(), "2 checkpoints in a row failed") ||
		!strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("restarting because of %v", err)
	}
	st := j.Checkpoints()
	if st.Failed < 2 || !strings.Contains(st.LastFailure, "disk on fire") || st.FailedInARow < 2 {
		t.Errorf("after the failover: %+v", st)
	}
	w.declining.Store(false)
	after := waitFor("checkpoints again after the restart", func(st CheckpointStats) bool {
		return st.Restarts >= 6 && st.Completed >= before.Completed+2 && st.FailedInARow == 0
	})
	if j.State() != JobRunning || j.Failure() != nil {
		t.Errorf("recovered, the job is %s (%v)", j.State(), j.Failure())
	}
	for deadline := time.Now().Add(10 * time.Second); restarts.Load() != int64(after.Restarts-5); {
		if time.Now().After(deadline) {
			t.Fatalf("OnRestart ran %d times for %d restarts", restarts.Load(), after.Restarts-5)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

// TestRestartWaitsForSlots: a job that fails over when no TaskManager is
// left says it waits for slots, and why, until one registers; then it runs
// again from its last complete checkpoint.
func TestRestartWaitsForSlots(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w, reg, job := endlessCkptJob()
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm1", Slots: 2, Registry: reg, Alloc: mem}))
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + filepath.Join(t.TempDir(), "ckpt"),
		CheckpointInterval: 10 * time.Millisecond, FailoverAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()
	waitState := func(want JobState, cond func(CheckpointStats) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); j.State() != want || !cond(j.Checkpoints()); {
			if time.Now().After(deadline) {
				t.Fatalf("want %s: state %s, checkpoints %+v, failure %v", want, j.State(), j.Checkpoints(), j.Failure())
			}
			time.Sleep(2 * time.Millisecond) // polling a condition with a deadline
		}
	}
	waitState(JobRunning, func(st CheckpointStats) bool { return st.Completed >= 1 })
	jm.RemoveTaskManager("tm1") // its tasks run on; a restart finds no slots
	w.declining.Store(true)
	waitState(JobWaitingForSlots, func(CheckpointStats) bool { return true })
	if err := j.Failure(); !errors.Is(err, ErrNoSlots) {
		t.Errorf("waiting for slots because of %v", err)
	}
	w.declining.Store(false)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm2", Slots: 2, Registry: reg, Alloc: mem}))
	last := j.Checkpoints().Last
	waitState(JobRunning, func(st CheckpointStats) bool { return st.Restarts == 1 && st.Last > last })
	if j.Failure() != nil {
		t.Errorf("running again, the job says %v", j.Failure())
	}
}
