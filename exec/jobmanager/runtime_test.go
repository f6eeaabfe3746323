package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// collectSink is a ResultSink keeping every value of column 0 (bigint).
type collectSink struct {
	mu   sync.Mutex
	vals []int64
}

// The TaskManager in this process is a Worker of the JobManager.
var _ Worker = (*taskmanager.TaskManager)(nil)

func (s *collectSink) Send(_ context.Context, _ string, b exec.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	col := b.Rec.Column(0).(*array.Int64)
	s.vals = append(s.vals, col.Int64Values()...)
	return nil
}

// subtaskTagger is a test operator that passes batches through after checking
// that, behind a hash edge on column 0, every row it sees hashes to its own
// subtask.
type subtaskTagger struct {
	tc     *exec.TaskContext
	hashed bool
}

func (o *subtaskTagger) Open(_ context.Context, tc *exec.TaskContext) error { o.tc = tc; return nil }
func (o *subtaskTagger) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	if o.hashed {
		h := make([]uint64, b.NumRows())
		if err := vector.HashRows(b.Rec, []int{0}, h); err != nil {
			return err
		}
		for _, v := range h {
			if int(v%uint64(o.tc.Parallelism)) != o.tc.Subtask {
				return errors.New("row arrived at the wrong subtask")
			}
		}
	}
	return out.Collect(ctx, b)
}
func (o *subtaskTagger) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}
func (o *subtaskTagger) Close(context.Context) error { return nil }

// failing is a test operator whose every batch fails.
type failing struct{ subtaskTagger }

func (o *failing) ProcessBatch(context.Context, int, exec.Batch, exec.Collector) error {
	return errors.New("boom")
}

// testRegistry holds the built-in operators and sources, and test operators.
func testRegistry() *exec.Registry {
	r := exec.NewRegistry()
	operators.Register(r)
	r.RegisterOperator("pass", func(exec.OperatorSpec) (exec.Operator, error) { return &subtaskTagger{}, nil })
	r.RegisterOperator("check_hash", func(exec.OperatorSpec) (exec.Operator, error) { return &subtaskTagger{hashed: true}, nil })
	r.RegisterOperator("fail", func(exec.OperatorSpec) (exec.Operator, error) { return &failing{}, nil })
	r.RegisterOperator("result", func(exec.OperatorSpec) (exec.Operator, error) { return &resultForTest{}, nil })
	return r
}

// resultForTest hands batches to the task's ResultSink.
type resultForTest struct{ subtaskTagger }

func (o *resultForTest) ProcessBatch(ctx context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	return o.tc.Results.Send(ctx, o.tc.JobID, b)
}

// valuesJob is values(n rows, 1 task) -rebalance-> pass(par) -hash-> check(par) -> result.
func valuesJob(n, par int, middle string) *exec.JobGraph {
	schema := types.Schema{{Name: "x", Type: types.Int64Type}}
	rows := make([][]types.Value, n)
	for i := range rows {
		rows[i] = []types.Value{types.IntValue(int64(i))}
	}
	op := func(kind string) exec.OperatorSpec { return exec.OperatorSpec{Kind: kind, Out: schema} }
	return &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "values", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "values", Out: schema,
				Config: exec.MustConfig(operators.ValuesConfig{Rows: rows})}}},
			{ID: 1, Name: middle, Parallelism: par, Chain: []exec.OperatorSpec{op(middle)}},
			{ID: 2, Name: "check", Parallelism: par, Chain: []exec.OperatorSpec{op("check_hash"), op("result")}},
		},
		Edges: []*exec.JobEdge{
			{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Rebalance}},
			{From: 1, To: 2, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}},
		},
	}
}

func TestJobRunsToEndOfStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, par := range []int{1, 2, 3} {
		jm := New(nil)
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{Slots: 3, Registry: testRegistry(), Alloc: mem}))
		sink := &collectSink{}
		job, err := jm.Submit("test", valuesJob(1000, par, "pass"), sink)
		if err != nil {
			t.Fatal(err)
		}
		<-job.Done()
		if err := job.Err(); err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		if job.State() != JobFinished {
			t.Errorf("state %s, want finished", job.State())
		}
		sort.Slice(sink.vals, func(i, j int) bool { return sink.vals[i] < sink.vals[j] })
		if len(sink.vals) != 1000 {
			t.Fatalf("parallelism %d: got %d rows, want 1000", par, len(sink.vals))
		}
		for i, v := range sink.vals {
			if v != int64(i) {
				t.Fatalf("parallelism %d: row %d is %d", par, i, v)
			}
		}
	}
}

func TestFailedTaskFailsJobAndFreesMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{Slots: 2, Registry: testRegistry(), Alloc: mem}))
	job, err := jm.Submit("test", valuesJob(100, 2, "fail"), &collectSink{})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if job.State() != JobFailed || job.Err() == nil || job.Err().Error() != "boom" {
		t.Fatalf("state %s err %v, want failed with boom", job.State(), job.Err())
	}
}

func TestCancelStopsJob(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{Slots: 2, Registry: testRegistry(), Alloc: mem}))
	// A sink that blocks until the job is cancelled.
	block := blockingSink{}
	job, err := jm.Submit("test", valuesJob(100, 2, "pass"), block)
	if err != nil {
		t.Fatal(err)
	}
	job.Cancel(exec.ErrJobCancelled)
	<-job.Done()
	if job.State() != JobCancelled {
		t.Fatalf("state %s err %v, want cancelled", job.State(), job.Err())
	}
}

type blockingSink struct{}

func (blockingSink) Send(ctx context.Context, _ string, _ exec.Batch) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

func TestPlacementSpreadsReplicas(t *testing.T) {
	slots := []exec.SlotRef{{TaskManager: "tm1", Index: 0}, {TaskManager: "tm1", Index: 1}, {TaskManager: "tm2", Index: 0}, {TaskManager: "tm2", Index: 1}, {TaskManager: "tm3", Index: 0}}
	g, err := BuildExecutionGraph("j", valuesJob(1, 3, "pass"), PlaceSlots(slots, nil))
	if err != nil {
		t.Fatal(err)
	}
	tms := map[string]bool{}
	for _, task := range g.Tasks {
		if task.ID.Vertex == 1 {
			tms[task.Slot.TaskManager] = true
		}
	}
	if len(tms) != 3 {
		t.Errorf("3 replicas of a vertex landed on %d TaskManagers, want 3", len(tms))
	}
	// values (1) -> pass (3): 3 channels; pass (3) -> check (3) hash: 9 channels.
	if len(g.Edges) != 12 {
		t.Errorf("%d channels, want 12", len(g.Edges))
	}
	if _, err := BuildExecutionGraph("j", valuesJob(1, 6, "pass"), PlaceSlots(slots, nil)); !errors.Is(err, ErrNoSlots) {
		t.Errorf("parallelism 6 on 5 slots: err %v, want ErrNoSlots", err)
	}
}

// TestPlaceNetworkTasks: values (1, on tm1) -> pass (3) -> check (3 by hash),
// one task of each vertex in slot 0 of each TaskManager, slot 1 spare. The
// expected placements are worked out by hand from PlaceNetworkTasks' rules.
func TestPlaceNetworkTasks(t *testing.T) {
	slots := []exec.SlotRef{{TaskManager: "tm1", Index: 0}, {TaskManager: "tm1", Index: 1}, {TaskManager: "tm2", Index: 0}, {TaskManager: "tm2", Index: 1}, {TaskManager: "tm3", Index: 0}, {TaskManager: "tm3", Index: 1}}
	type placed struct {
		from      exec.TaskID
		to        int
		slot      exec.SlotRef
		ownedSlot bool
	}
	for _, tc := range []struct {
		mode string
		want []placed
	}{
		// No network task.
		{exec.NetworkFused, nil},
		// values' edge: its TaskManager has a spare slot. pass's edge: the
		// three producers need one each, tm1's was just taken, so fused.
		{exec.NetworkAuto, []placed{{exec.TaskID{Vertex: 0, Subtask: 0}, 1, exec.SlotRef{TaskManager: "tm1", Index: 1}, true}}},
		// Every producer gets one; pass[0] shares its own slot.
		{exec.NetworkOwn, []placed{
			{exec.TaskID{Vertex: 0, Subtask: 0}, 1, exec.SlotRef{TaskManager: "tm1", Index: 1}, true},
			{exec.TaskID{Vertex: 1, Subtask: 0}, 2, exec.SlotRef{TaskManager: "tm1", Index: 0}, false},
			{exec.TaskID{Vertex: 1, Subtask: 1}, 2, exec.SlotRef{TaskManager: "tm2", Index: 1}, true},
			{exec.TaskID{Vertex: 1, Subtask: 2}, 2, exec.SlotRef{TaskManager: "tm3", Index: 1}, true},
		}},
	} {
		job := valuesJob(1, 3, "pass")
		job.NetworkTasks = tc.mode
		free := []exec.SlotRef{{TaskManager: "tm1", Index: 0}, {TaskManager: "tm2", Index: 0}, {TaskManager: "tm3", Index: 0}, {TaskManager: "tm1", Index: 1}, {TaskManager: "tm2", Index: 1}, {TaskManager: "tm3", Index: 1}}
		g, err := BuildExecutionGraph("j", job, PlaceSlots(slots, nil))
		if err != nil {
			t.Fatal(err)
		}
		PlaceNetworkTasks(g, free)
		var got []placed
		for _, nt := range g.NetTasks {
			got = append(got, placed{nt.From, nt.ToVertex, nt.Slot, nt.Own})
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: network tasks %v, want %v", tc.mode, got, tc.want)
		}
	}
}

// TestOccupyCountsNetworkTasks: the slots network tasks of their own take are
// busy while their job runs, and free again after.
func TestOccupyCountsNetworkTasks(t *testing.T) {
	jm := New(nil)
	for _, id := range []string{"tm1", "tm2", "tm3"} {
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: id, Slots: 2, Registry: testRegistry()}))
	}
	job := valuesJob(1, 3, "pass")
	job.NetworkTasks = exec.NetworkOwn
	g, err := jm.Schedule(job)
	if err != nil {
		t.Fatal(err)
	}
	own := map[exec.SlotRef]bool{}
	for _, nt := range g.NetTasks {
		if nt.Own {
			own[nt.Slot] = true
		}
	}
	if len(own) == 0 {
		t.Fatalf("no network task in a slot of its own: %+v", g.NetTasks)
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.occupy(g, 1)
	for s := range own {
		if jm.busy[s] != 1 {
			t.Errorf("slot %s of a network task is not busy", s)
		}
	}
	if len(jm.busy) != 3+len(own) {
		t.Errorf("%d slots busy, want the tasks' 3 and the network tasks' %d", len(jm.busy), len(own))
	}
	if _, _, free := jm.place(job); len(free) != 6-3-len(own) {
		t.Errorf("%d slots free while the job runs, want %d", len(free), 6-3-len(own))
	}
	jm.occupy(g, -1)
	if len(jm.busy) != 0 {
		t.Errorf("slots still busy after the job: %v", jm.busy)
	}
}

// TestAutoParallelismTakesFreeSlots: a job that leaves parallelism to the
// JobManager gets the slots no running job uses, within its min and max, and is
// placed on them first.
func TestAutoParallelismTakesFreeSlots(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	jm := New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "tm", Slots: 4, Registry: testRegistry(), Alloc: mem}))
	blocker, err := jm.Submit("blocker", valuesJob(10, 2, "pass"), blockingSink{})
	if err != nil {
		t.Fatal(err)
	}
	busy := map[exec.SlotRef]bool{}
	for _, task := range blocker.Graph.Tasks {
		busy[task.Slot] = true
	}
	auto := func(min, max int) *exec.JobGraph {
		g := valuesJob(10, exec.AutoParallelism, "pass")
		g.MinParallelism, g.MaxParallelism = min, max
		return g
	}
	for _, tc := range []struct {
		min, max, want int
	}{{0, 0, 2}, {0, 1, 1}, {3, 0, 3}} {
		eg, err := jm.Schedule(auto(tc.min, tc.max))
		if err != nil {
			t.Fatal(err)
		}
		got := eg.Job.Vertices[1].Parallelism
		if got != tc.want {
			t.Errorf("min %d max %d: parallelism %d, want %d", tc.min, tc.max, got, tc.want)
		}
		if tc.want <= 2 {
			for _, task := range eg.Tasks {
				if busy[task.Slot] {
					t.Errorf("min %d max %d: task %s placed on busy %s while free slots remain", tc.min, tc.max, task.Name, task.Slot)
				}
			}
		}
	}
	blocker.Cancel(exec.ErrJobCancelled)
	<-blocker.Done()
	eg, err := jm.Schedule(auto(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := eg.Job.Vertices[1].Parallelism; got != 4 {
		t.Errorf("after the blocker ended: parallelism %d, want 4", got)
	}
}
