package jobmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// changeSink is a transactional sink of a changelog: rows since the last
// barrier are pending, as "+row" or "-row"; a barrier closes them into the
// checkpoint's epoch, committed when the checkpoint completes. It fails once,
// at a row from its failAt-th on.
type changeSink struct {
	w       *changeWorld
	tc      *exec.TaskContext
	pending []string
	epochs  map[int64][]string
}

type changeWorld struct {
	mu        sync.Mutex
	committed map[[2]int64][]string // by sink subtask and epoch
	seen      atomic.Int64
	failAt    int64
	failed    atomic.Bool
	notified  atomic.Bool // a checkpoint completed
	restored  atomic.Int64
}

func (o *changeSink) Open(_ context.Context, tc *exec.TaskContext) error { o.tc = tc; return nil }
func (o *changeSink) Close(context.Context) error                        { return nil }

func (o *changeSink) ProcessBatch(_ context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	for i := range b.NumRows() {
		// The failure comes after a checkpoint completed, for the restart to
		// restore one.
		if o.w.seen.Add(1) >= o.w.failAt && o.w.notified.Load() && o.w.failed.CompareAndSwap(false, true) {
			return fmt.Errorf("injected failure")
		}
		row := ""
		for _, c := range b.Rec.Columns() {
			if c.IsNull(i) {
				row += "|null"
			} else {
				row += fmt.Sprintf("|%d", c.(*array.Int64).Value(i))
			}
		}
		sign := "+"
		if op := b.Op(i); op == exec.Delete || op == exec.UpdateBefore {
			sign = "-"
		}
		o.pending = append(o.pending, sign+row)
	}
	return nil
}

func (o *changeSink) ProcessSignal(_ context.Context, _ int, s exec.Signal, _ exec.Collector) error {
	if s.Kind == exec.Barrier {
		if o.epochs == nil {
			o.epochs = map[int64][]string{}
		}
		o.epochs[s.Checkpoint] = o.pending
		o.pending = nil
	}
	return nil
}

func (o *changeSink) commit(id int64) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	for e, rows := range o.epochs {
		if e <= id {
			o.w.committed[[2]int64{int64(o.tc.Subtask), e}] = rows
			delete(o.epochs, e)
		}
	}
}

func (o *changeSink) NotifyCheckpointComplete(_ context.Context, id int64) error {
	o.commit(id)
	o.w.notified.Store(true)
	return nil
}

// SnapshotState keeps the epochs not yet committed; restored from
// checkpoint n, it commits those (n's notification may have been lost with
// the failure).
func (o *changeSink) SnapshotState(context.Context, int64) ([]byte, error) {
	return json.Marshal(o.epochs)
}

func (o *changeSink) RestoreState(_ context.Context, data []byte) error {
	if err := json.Unmarshal(data, &o.epochs); err != nil {
		return err
	}
	o.w.restored.Add(1)
	o.commit(1 << 62)
	return nil
}

// TestStreamJoinRestart: a FULL JOIN of two streams (stream_join, keys
// n % 37 and n % 41 + 30, so that keys of both sides go unmatched for a
// while) into a transactional sink, with checkpoints every 20ms on two
// TaskManagers; the sink fails once mid-stream, and the job restarts from its
// last complete checkpoint: the join's state and the sources' positions
// rewind together. The committed changes, applied, are then exactly the
// join of the two sides' numbers, computed here by nested loops. It runs on
// both state backends (on disk, the restart downloads the join's pebble
// files).
func TestStreamJoinRestart(t *testing.T) {
	for _, backend := range []string{operators.StateMemory, operators.StateDisk} {
		t.Run(backend, func(t *testing.T) { streamJoinRestart(t, backend) })
	}
}

func streamJoinRestart(t *testing.T, backend string) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	w := &ckptTest{total: 1000, committed: map[[2]int64][]int64{}}
	cw := &changeWorld{committed: map[[2]int64][]string{}, failAt: 700}
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
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: fmt.Sprint("tm", i), Slots: 3, Registry: reg, Alloc: mem, Data: data,
			StateBackend: backend, SpillDir: t.TempDir()}))
	}
	n := types.Schema{{Name: "n", Type: types.Int64Type}}
	kn := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}}
	side := func(id int, mod, add int64) *exec.JobVertex {
		k := expr.Call("+", types.Int64Type, expr.Call("%", types.Int64Type, expr.Column(0, types.Int64Type, "n"),
			expr.Literal(types.IntValue(mod))), expr.Literal(types.IntValue(add)))
		return &exec.JobVertex{ID: id, Name: fmt.Sprint("src", id), Parallelism: 2, Chain: []exec.OperatorSpec{
			{Kind: "source", Out: n, Config: exec.MustConfig(exec.ConnectorSpec{Connector: "ckpt", Schema: n})},
			{Kind: "project", Out: kn, Config: exec.MustConfig(operators.ProjectConfig{Exprs: []*expr.Expr{k, expr.Column(0, types.Int64Type, "n")}})},
		}}
	}
	out := append(append(types.Schema{}, kn...), kn...)
	cfg := operators.StreamJoinConfig{Kind: "full", LeftKeys: []int{0}, RightKeys: []int{0}, Left: kn, Right: kn}
	job := &exec.JobGraph{
		Vertices: []*exec.JobVertex{side(0, 37, 0), side(1, 41, 30),
			{ID: 2, Name: "join", Parallelism: 2, Chain: []exec.OperatorSpec{
				{Kind: "stream_join", Out: out, Config: exec.MustConfig(cfg)},
				{Kind: "change_sink", Out: out},
			}}},
		Edges: []*exec.JobEdge{
			{From: 0, To: 2, Input: 0, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}},
			{From: 1, To: 2, Input: 1, Partition: exec.Partition{Kind: exec.Hash, Keys: []int{0}}},
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

	// The expected rows: the full join of 0..total-1 on each side.
	want := map[string]int{}
	for l := range w.total {
		found := false
		for r := range w.total {
			if l%37 == r%41+30 {
				want[fmt.Sprintf("|%d|%d|%d|%d", l%37, l, r%41+30, r)]++
				found = true
			}
		}
		if !found {
			want[fmt.Sprintf("|%d|%d|null|null", l%37, l)]++
		}
	}
	for r := range w.total {
		found := false
		for l := range w.total {
			found = found || l%37 == r%41+30
		}
		if !found {
			want[fmt.Sprintf("|null|null|%d|%d", r%41+30, r)]++
		}
	}
	applied := func() (map[string]int, error) {
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
			if c < 0 {
				return nil, fmt.Errorf("row %s retracted more often than emitted", r)
			}
			if c == 0 {
				delete(got, r)
			}
		}
		return got, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := applied()
		if err == nil && maps.Equal(got, want) && cw.failed.Load() {
			break
		}
		select {
		case <-j.Done():
			t.Fatalf("the job ended: %v", j.Err())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d committed rows (err %v), want %d; failed=%v checkpoints %+v",
				60*time.Second, len(got), err, len(want), cw.failed.Load(), j.Checkpoints())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if st := j.Checkpoints(); st.Restarts != 1 || st.RestoredFrom == 0 {
		t.Errorf("checkpoints %+v: want one restart from a checkpoint", st)
	}
}
