package jobmanager

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestHashAggDiskRestart: a streaming GROUP BY on TaskManagers whose default
// state backend is disk, checkpointed every 20ms into a file:// store (its
// pebble files uploaded incrementally, the store pruned as checkpoints
// complete), into a transactional sink that fails once mid-stream: the job
// restarts from its last complete checkpoint, downloading the groups' files.
// The committed changes, applied, are then exactly each key's count and
// maximum, computed here.
func TestHashAggDiskRestart(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 1000, committed: map[[2]int64][]int64{}}
	cw := &changeWorld{committed: map[[2]int64][]string{}, failAt: 500}
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterOperator("change_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &changeSink{w: cw}, nil })
	jm := New(nil)
	for i := range 2 {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer data.Close()
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: fmt.Sprint("tm", i), Slots: 2, Registry: reg, Alloc: mem, Data: data,
			StateBackend: operators.StateDisk, StateMemory: 2 << 20, SpillDir: t.TempDir()}))
	}
	const mod = 101
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	kn := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}}
	k := expr.Call("%", types.Int64Type, expr.Column(0, types.Int64Type, "n"), expr.Literal(types.IntValue(mod)))
	out := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "c", Type: types.Int64Type}, {Name: "m", Type: types.Int64Type}}
	cfg := operators.HashAggConfig{GroupBy: []int{0}, Emit: operators.AggEmitUpdates, Aggs: []operators.AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "max", Arg: 1, Type: types.Int64Type}}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "src", Parallelism: 2, Chain: []exec.OperatorSpec{
				{Kind: "source", Out: n, Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})},
				{Kind: "project", Out: kn, Config: exec.MustConfig(operators.ProjectConfig{Exprs: []*expr.Expr{k, expr.Column(0, types.Int64Type, "n")}})},
			}},
			{ID: 1, Name: "agg", Parallelism: 2, Chain: []exec.OperatorSpec{
				{Kind: "hash_agg", Out: out, Config: exec.MustConfig(cfg)},
				{Kind: "change_sink", Out: out},
			}}},
		Edges: []*exec.JobEdge{{From: 0, To: 1, Input: 0, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}}},
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	j, err := jm.SubmitJob("test", job, nil, JobOptions{CheckpointURL: "file://" + dir, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		j.Cancel(fmt.Errorf("%w: test over", exec.ErrJobCancelled))
		<-j.Done()
	}()

	want := map[string]int{}
	for g := range int64(mod) {
		var c, m int64
		for x := g; x < w.total; x += mod {
			c, m = c+1, x
		}
		want[fmt.Sprintf("|%d|%d|%d", g, c, m)] = 1
	}
	applied := func() map[string]int {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		got := map[string]int{}
		for _, rows := range cw.committed {
			for _, r := range rows {
				if r[0] == '+' {
					got[r[1:]]++
				} else {
					got[r[1:]]--
				}
			}
		}
		for r, c := range got {
			if c == 0 {
				delete(got, r)
			}
		}
		return got
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := applied()
		if maps.Equal(got, want) && cw.failed.Load() {
			break
		}
		select {
		case <-j.Done():
			t.Fatalf("the job ended: %v", j.Err())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d committed rows, want %d; failed=%v checkpoints %+v",
				60*time.Second, len(got), len(want), cw.failed.Load(), j.Checkpoints())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if st := j.Checkpoints(); st.Restarts != 1 || st.RestoredFrom == 0 {
		t.Errorf("checkpoints %+v: want one restart from a checkpoint", st)
	}
	if shared, _ := filepath.Glob(filepath.Join(dir, "*", "shared", "*", "*.sst")); len(shared) == 0 {
		t.Errorf("no shared state files in the checkpoint store: the groups were not on disk")
	}
}
