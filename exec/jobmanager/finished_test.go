package jobmanager

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestFinishedJobReleasesTasks: once a job has finished, its tasks and their
// operators are garbage, though the job stays listed (its Deployment
// reachable from the JobManager, as SHOW PROCESSLIST lists it): each
// operator's cleanup runs after a collection. A finished job's Deployment
// used to keep its checkpoint trigger and completion closures, and through
// them every task and its operators' state. The job checkpoints, so those
// closures exist.
func TestFinishedJobReleasesTasks(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var built, released atomic.Int64
	reg := testRegistry()
	reg.RegisterOperator("probe", func(exec.OperatorSpec) (exec.Operator, error) {
		op := &subtaskTagger{}
		built.Add(1)
		runtime.AddCleanup(op, func(n *atomic.Int64) { n.Add(1) }, &released)
		return op, nil
	})
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{Slots: 3, Registry: reg, Alloc: mem}))
	job, err := jm.SubmitJob("test", valuesJob(1000, 2, "probe"), &collectSink{},
		JobOptions{CheckpointURL: "file://" + t.TempDir(), CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if err := job.Err(); err != nil {
		t.Fatal(err)
	}
	if built.Load() != 2 {
		t.Fatalf("%d probes built, want one per subtask (2)", built.Load())
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() != built.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d operators of the finished job were collected", released.Load(), built.Load())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine after the collection
	}
	if job.State() != JobFinished || len(jm.Jobs()) != 1 {
		t.Errorf("state %s, %d jobs listed; want the job finished and still listed", job.State(), len(jm.Jobs()))
	}
}

// stateProbe is an operator with a state of one byte, its name; unread ones
// say nobody reads it once their inputs have ended.
type stateProbe struct {
	subtaskTagger
	name string
}

func (o *stateProbe) SnapshotState(context.Context, int64) ([]byte, error) {
	return []byte(o.name), nil
}
func (o *stateProbe) RestoreState(context.Context, []byte) error { return nil }

type unreadProbe struct{ stateProbe }

func (o *unreadProbe) EndStateUnread() {}

// TestFinalStateLeavesOutUnread: the state a task stores as it ends holds
// its operators' states but those of operators that say nobody reads it then
// (exec.EndStateUnread, as a stream join holding every row does).
func TestFinalStateLeavesOutUnread(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	reg := testRegistry()
	reg.RegisterOperator("kept", func(exec.OperatorSpec) (exec.Operator, error) { return &stateProbe{name: "kept"}, nil })
	reg.RegisterOperator("unread", func(exec.OperatorSpec) (exec.Operator, error) {
		return &unreadProbe{stateProbe{name: "unread"}}, nil
	})
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{Slots: 3, Registry: reg, Alloc: mem}))
	g := valuesJob(100, 1, "kept")
	v := g.Vertices[1]
	v.Chain = append(v.Chain, exec.OperatorSpec{Kind: "unread", Out: v.Chain[0].Out})
	url := "file://" + t.TempDir()
	job, err := jm.SubmitJob("test", g, &collectSink{}, JobOptions{CheckpointURL: url, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if err := job.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	data, err := store.GetFinal(ctx, job.ID, state.TaskKey(exec.TaskID{Vertex: 1}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.UnmarshalTaskSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ops) != 1 || string(st.Ops[0]) != "kept" {
		t.Errorf("final state's operators %v, want only the first's (kept)", st.Ops)
	}
}
