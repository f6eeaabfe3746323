package jobmanager

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// oddLate plays a windowed operator: it finds its odd numbers late and
// sends them to its task's late output, the even ones to its own.
type oddLate struct{ tc *exec.TaskContext }

func (o *oddLate) Open(_ context.Context, tc *exec.TaskContext) error { o.tc = tc; return nil }
func (o *oddLate) EmitsLate() bool                                    { return true }
func (o *oddLate) Close(context.Context) error                        { return nil }

func (o *oddLate) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	var even, odd []int32
	for i, v := range b.Rec.Column(0).(*array.Int64).Int64Values() {
		if v%2 == 0 {
			even = append(even, int32(i))
		} else {
			odd = append(odd, int32(i))
		}
	}
	for _, part := range []struct {
		idx []int32
		to  exec.Collector
	}{{even, out}, {odd, o.tc.Late}} {
		if len(part.idx) == 0 {
			continue
		}
		rec, err := vector.GatherRecord(o.tc.Alloc, b.Rec, part.idx)
		if err != nil {
			return err
		}
		err = part.to.Collect(ctx, exec.Batch{Rec: rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *oddLate) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

// TestLateEdgeRestart: late rows go on a late edge (exec.JobEdge.Late) to a
// sink of their own, which takes part in checkpoints through the barriers
// the edge carries: with a failure mid-stream and a restart from the last
// checkpoint, every late row is committed exactly once, as is every other
// row in the main sink.
func TestLateEdgeRestart(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 2000, committed: map[[2]int64][]int64{}}
	w.failAt.Store(1234)
	late := &ckptTest{committed: map[[2]int64][]int64{}}
	late.failAt.Store(-1)
	reg := testRegistry()
	reg.RegisterSource("ckpt", func(exec.ConnectorSpec) (exec.Source, error) { return &ckptSource{w: w}, nil })
	reg.RegisterOperator("ckpt_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &ckptSink{w: w}, nil })
	reg.RegisterOperator("late_sink", func(exec.OperatorSpec) (exec.Operator, error) { return &ckptSink{w: late}, nil })
	reg.RegisterOperator("odd_late", func(exec.OperatorSpec) (exec.Operator, error) { return &oddLate{}, nil })
	jm := New(nil)
	for i := range 2 {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer data.Close()
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: fmt.Sprint("tm", i), Slots: 3, Registry: reg, Alloc: mem, Data: data}))
	}
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{
			{ID: 0, Name: "src", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "source", Out: n,
				Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})}, {Kind: "odd_late", Out: n}}},
			{ID: 1, Name: "sink", Parallelism: 2, Chain: []exec.OperatorSpec{{Kind: "ckpt_sink", Out: n}}},
			{ID: 2, Name: "late", Parallelism: 1, Chain: []exec.OperatorSpec{{Kind: "late_sink", Out: n}}},
		},
		Edges: []*exec.JobEdge{
			{From: 0, To: 1, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}},
			{From: 0, To: 2, Partition: exec.Partition{Kind: exec.Rebalance}, Late: true},
		},
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
	// committed returns how many distinct numbers of the given parity w
	// committed, and one committed twice or of the other parity (or -1).
	committed := func(w *ckptTest, parity int64) (distinct int, bad int64) {
		w.mu.Lock()
		defer w.mu.Unlock()
		bad = -1
		seen := map[int64]bool{}
		for _, vals := range w.committed {
			for _, v := range vals {
				if seen[v] || v%2 != parity {
					bad = v
				}
				seen[v] = true
			}
		}
		return len(seen), bad
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		evens, badEven := committed(w, 0)
		odds, badOdd := committed(late, 1)
		if badEven >= 0 || badOdd >= 0 {
			t.Fatalf("committed twice or to the wrong sink: %d (main), %d (late)", badEven, badOdd)
		}
		if evens == int(w.total)/2 && odds == int(w.total)/2 {
			break
		}
		select {
		case <-j.Done():
			t.Fatalf("the job ended: %v", j.Err())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d even and %d odd of %d numbers committed; checkpoints %+v", evens, odds, w.total, j.Checkpoints())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if st := j.Checkpoints(); !w.failed.Load() || st.Restarts != 1 || late.restored.Load() == 0 {
		t.Errorf("failed=%v restarts=%d late sink restored=%d; want one restart from a checkpoint", w.failed.Load(), st.Restarts, late.restored.Load())
	}
}
