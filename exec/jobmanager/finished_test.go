package jobmanager

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
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
