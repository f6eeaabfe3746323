package control

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
)

// collect is a ResultSink keeping (x, count) rows.
type collect struct {
	mu   sync.Mutex
	rows map[int64]int64
}

func (c *collect) Send(_ context.Context, _ string, b exec.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	xs := b.Rec.Column(0).(*array.Int64)
	ns := b.Rec.Column(1).(*array.Int64)
	for i := 0; i < b.NumRows(); i++ {
		c.rows[xs.Value(i)] += ns.Value(i)
	}
	return nil
}

// countJob is values (one task) -hash-> count(*) group by x (par tasks) -> result.
func countJob(n, mod, par int) *exec.JobGraph {
	x := types.Schema{{Name: "x", Type: types.Int64Type}}
	rows := make([][]types.Value, n)
	for i := range rows {
		rows[i] = []types.Value{types.IntValue(int64(i % mod))}
	}
	out := types.Schema{{Name: "x", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}}
	agg := operators.HashAggConfig{GroupBy: []int{0}, Phase: operators.AggComplete,
		Aggs: []operators.AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}
	return &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "values", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "values", Out: x,
				Config: exec.MustConfig(operators.ValuesConfig{Rows: rows})}}},
			{ID: 1, Name: "agg", Parallelism: par, Chain: []exec.OperatorSpec{
				{Kind: "hash_agg", Out: out, Config: exec.MustConfig(agg)},
				{Kind: "result", Out: out, Config: exec.MustConfig(operators.ResultConfig{})}}},
		},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}}},
	}
}

type cluster struct {
	jm     *jobmanager.JobManager
	srv    *JobManagerServer
	cancel []context.CancelFunc
	done   []chan struct{}
	ids    []string // of the TaskManagers, in the order of cancel and done
}

// startCluster runs a JobManager and n TaskManagers in this process, talking over
// gRPC and network channels on loopback, as separate processes would.
func startCluster(t *testing.T, n int, mem memory.Allocator) *cluster {
	t.Helper()
	c := &cluster{jm: jobmanager.New(nil)}
	jmData, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c.srv = NewJobManagerServer(JobManagerConfig{JM: c.jm, Data: jmData,
		HeartbeatInterval: 50 * time.Millisecond, HeartbeatTimeout: time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.srv.Serve(ln)
	for i := 0; i < n; i++ {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		reg := exec.NewRegistry()
		operators.Register(reg)
		reg.RegisterSource("endless", func(exec.ConnectorSpec) (exec.Source, error) { return &endless{}, nil })
		tm := taskmanager.New(taskmanager.Config{ID: data.Addr().String(), Slots: 1,
			Registry: reg, Alloc: mem, Data: data})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			RunTaskManager(ctx, TaskManagerConfig{JobManager: ln.Addr().String(), TM: tm})
			data.Close()
		}()
		c.cancel = append(c.cancel, cancel)
		c.done = append(c.done, done)
		c.ids = append(c.ids, data.Addr().String())
	}
	t.Cleanup(func() {
		for i, cancel := range c.cancel {
			cancel()
			<-c.done[i]
		}
		c.srv.Close()
		jmData.Close()
	})
	c.waitFor(t, n)
	return c
}

// waitFor waits until n TaskManagers are registered.
func (c *cluster) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.jm.TaskManagers()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d TaskManagers registered, want %d", len(c.jm.TaskManagers()), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

func TestJobOnRemoteTaskManagers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := startCluster(t, 3, mem)
	sink := &collect{rows: map[int64]int64{}}
	job, err := c.jm.Submit("test", countJob(3000, 7, 3), sink)
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if err := job.Err(); err != nil {
		t.Fatal(err)
	}
	tms := map[string]bool{}
	for _, task := range job.Graph.Tasks {
		tms[task.Slot.TaskManager] = true
	}
	if len(tms) != 3 {
		t.Errorf("tasks ran on %d TaskManagers, want 3", len(tms))
	}
	var keys []int64
	for k, n := range sink.rows {
		keys = append(keys, k)
		want := int64(3000 / 7)
		if k < 3000%7 {
			want++
		}
		if n != want {
			t.Errorf("count(%d) = %d, want %d", k, n, want)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	if fmt.Sprint(keys) != "[0 1 2 3 4 5 6]" {
		t.Errorf("groups %v", keys)
	}
	rows := int64(0)
	for _, m := range job.Metrics() {
		rows += m.RowsIn.Load()
	}
	if rows == 0 {
		t.Error("no task metrics came back from the TaskManagers")
	}
}

// TestLostTaskManager: a TaskManager that goes away is removed, and a job that
// then needs more slots than remain is refused.
func TestLostTaskManager(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := startCluster(t, 2, mem)
	c.cancel[1]()
	<-c.done[1]
	c.waitFor(t, 1)
	if _, err := c.jm.Submit("test", countJob(10, 2, 2), &collect{rows: map[int64]int64{}}); err == nil {
		t.Fatal("a job of parallelism 2 was accepted on one slot")
	}
	job, err := c.jm.Submit("test", countJob(10, 2, 1), &collect{rows: map[int64]int64{}})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if err := job.Err(); err != nil {
		t.Fatal(err)
	}
}

// discard is a ResultSink that drops what it gets.
type discard struct{}

func (discard) Send(context.Context, string, exec.Batch) error { return nil }

// endless is a source that emits 100 rows of x, then waits to be cancelled.
// It emits under the checkpoint lock, as a checkpointed source must.
type endless struct{ lock sync.Locker }

// endless has a (trivial) state, so that checkpoints store something.
func (*endless) SnapshotState(context.Context, int64) ([]byte, error) { return []byte("{}"), nil }
func (*endless) RestoreState(context.Context, []byte) error           { return nil }

func (e *endless) Open(_ context.Context, tc *exec.TaskContext) error {
	e.lock = &sync.Mutex{}
	if tc.CheckpointLock != nil {
		e.lock = tc.CheckpointLock
	}
	return nil
}
func (*endless) Close() error { return nil }
func (e *endless) Run(ctx context.Context, out exec.Collector) error {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 100 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	b.Release()
	x := types.Schema{{Name: "x", Type: types.Int64Type}}
	rec := array.NewRecordBatch(x.Arrow(), []arrow.Array{col}, 100)
	col.Release()
	e.lock.Lock()
	err := out.Collect(ctx, exec.Batch{Rec: rec})
	e.lock.Unlock()
	rec.Release()
	if err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// endlessVertex is vertex id of a job graph: par tasks, each an endless source
// of column x whose rows go to the result.
func endlessVertex(id, par int) *exec.JobVertex {
	x := types.Schema{{Name: "x", Type: types.Int64Type}}
	return &exec.JobVertex{ID: id, Name: "endless", Parallelism: par, Chain: []exec.OperatorSpec{
		{Kind: "source", Out: x, Config: exec.MustConfig(exec.ConnectorSpec{Connector: "endless", Schema: x})},
		{Kind: "result", Out: x, Config: exec.MustConfig(operators.ResultConfig{})}}}
}

// TestRunningJobMetrics: heartbeats bring the counters of a job's remote tasks
// while it runs, not only when it ends.
func TestRunningJobMetrics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := startCluster(t, 2, mem)
	g := &exec.JobGraph{Vertices: []*exec.JobVertex{endlessVertex(0, 2)}}
	job, err := c.jm.Submit("test", g, discard{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-job.Done()
	}()
	sourceRows := func() int64 {
		n := int64(0)
		for _, m := range job.Metrics() {
			n += m.RowsIn.Load()
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for sourceRows() != 200 {
		select {
		case <-job.Done():
			t.Fatalf("the endless job ended: %v", job.Err())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("running job's sources counted %d rows, want 200", sourceRows())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestRemoteCheckpoints: checkpoints are triggered, acknowledged and completed
// across gRPC; when the TaskManager running the job goes away, the job restarts
// on another from its last complete checkpoint and goes on checkpointing.
func TestRemoteCheckpoints(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := startCluster(t, 3, mem)
	g := &exec.JobGraph{Vertices: []*exec.JobVertex{endlessVertex(0, 1)}}
	job, err := c.jm.SubmitJob("test", g, discard{}, jobmanager.JobOptions{
		CheckpointURL: "file://" + t.TempDir(), CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		job.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-job.Done()
	}()
	waitStats := func(what string, ok func(jobmanager.CheckpointStats) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok(job.Checkpoints()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %+v", what, job.Checkpoints())
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
	}
	waitStats("3 checkpoints", func(s jobmanager.CheckpointStats) bool { return s.Completed >= 3 })
	// Stop the TaskManager running the job.
	victim := slices.Index(c.ids, job.Graph.Tasks[0].Slot.TaskManager)
	if victim < 0 {
		t.Fatal("no TaskManager runs the job")
	}
	c.cancel[victim]()
	<-c.done[victim]
	before := job.Checkpoints().Completed
	waitStats("a restart and more checkpoints", func(s jobmanager.CheckpointStats) bool {
		return s.Restarts >= 1 && s.RestoredFrom > 0 && s.Completed >= before+3
	})
	if job.State() != jobmanager.JobRunning {
		t.Errorf("job state %s after a restart", job.State())
	}
}

// TestCheckpointsWithEndedTask: a task that ends as soon as it is deployed (a
// bounded source with nothing to read, as a restored ended task is) takes no
// part in checkpoints, so its answer that it ended must reach the coordinator:
// else no checkpoint of the job ever completes. The answer arrives right behind
// the TaskManager's answer to the deployment; and on the second TaskManager,
// whose only task is empty[2/2], right before its deployment's end.
func TestCheckpointsWithEndedTask(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := startCluster(t, 2, mem)
	x := types.Schema{{Name: "x", Type: types.Int64Type}}
	for i := range 20 {
		g := &exec.JobGraph{Vertices: []*exec.JobVertex{
			{ID: 0, Name: "empty", Parallelism: 2, Chain: []exec.OperatorSpec{
				{Kind: "values", Out: x, Config: exec.MustConfig(operators.ValuesConfig{})},
				{Kind: "result", Out: x, Config: exec.MustConfig(operators.ResultConfig{})}}},
			endlessVertex(1, 1)}}
		job, err := c.jm.SubmitJob("test", g, discard{}, jobmanager.JobOptions{
			CheckpointURL: "file://" + t.TempDir(), CheckpointInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if tm := job.Graph.Tasks[1].Slot.TaskManager; tm == job.Graph.Tasks[0].Slot.TaskManager || tm == job.Graph.Tasks[2].Slot.TaskManager {
			t.Fatalf("empty[2/2] shares TaskManager %s with another task", tm)
		}
		deadline := time.Now().Add(10 * time.Second)
		for job.Checkpoints().Completed == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("job %d: no checkpoint completed: %+v", i, job.Checkpoints())
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
		job.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-job.Done()
	}
}
