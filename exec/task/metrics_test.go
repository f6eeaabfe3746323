package task

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// passOp passes its batches and signals on, after spinning until the clock
// has moved, so each call takes a measurable time however fine the clock.
type passOp struct{}

func (passOp) Open(context.Context, *exec.TaskContext) error { return nil }
func (passOp) ProcessBatch(ctx context.Context, _ int, b exec.Batch, out exec.Collector) error {
	for t0 := time.Now(); time.Since(t0) <= 0; {
	}
	return out.Collect(ctx, b)
}
func (passOp) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}
func (passOp) Close(context.Context) error { return nil }

// runChain runs an inbox task of three passOps over batches of 3 and 2 rows
// and returns its metrics once it has ended.
func runChain(t *testing.T, noMetrics bool) *exec.TaskMetrics {
	t.Helper()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	tc := &exec.TaskContext{JobID: "job", TaskName: "t[0/1]", Parallelism: 1, Alloc: mem,
		Log: slog.New(slog.DiscardHandler), Metrics: &exec.TaskMetrics{}, NoTaskMetrics: noMetrics}
	tk := New(tc, nil, []exec.Operator{passOp{}, passOp{}, passOp{}}, []int{1})
	schema := types.Schema{{Name: "x", Type: types.Int64Type}}
	tk.Inbox() <- exec.Message{Batch: exec.Batch{Rec: testkit.Record(t, mem, schema, `[{"x": 1}, {"x": 2}, {"x": 3}]`)}}
	tk.Inbox() <- exec.Message{Batch: exec.Batch{Rec: testkit.Record(t, mem, schema, `[{"x": 4}, {"x": 5}]`)}}
	tk.Inbox() <- exec.Message{Signal: exec.Signal{Kind: exec.EndOfStream}}
	if err := tk.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tc.Metrics
}

// TestTaskMetricsOff: a task with NoTaskMetrics still counts the rows and
// batches SHOW PROCESSLIST shows, but neither splits its time nor counts
// per operator; with them on it does both.
func TestTaskMetricsOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		m := runChain(t, off)
		if in, out, bin, bout := m.RowsIn.Load(), m.RowsOut.Load(), m.BatchesIn.Load(), m.BatchesOut.Load(); in != 5 || out != 5 || bin != 2 || bout != 2 {
			t.Errorf("off=%v: rows in/out %d/%d, batches in/out %d/%d; want 5/5 and 2/2", off, in, out, bin, bout)
		}
		busy, chain := m.BusyNanos.Load(), m.ChainRowsOut()
		if off {
			if busy != 0 || chain != nil {
				t.Errorf("metrics off: busy %d ns, chain rows %v; want 0 and none", busy, chain)
			}
			continue
		}
		if busy <= 0 {
			t.Errorf("metrics on: busy %d ns, want more than 0", busy)
		}
		if want := []int64{5, 5, 5}; len(chain) != 3 || chain[0] != 5 || chain[1] != 5 || chain[2] != 5 {
			t.Errorf("metrics on: chain rows %v, want %v", chain, want)
		}
	}
}

// TestOperatorTimes: each operator of a fused chain gets a time of its own,
// and together they take at most the task's busy time, whether the chain is
// fed by an inbox or starts with a source.
func TestOperatorTimes(t *testing.T) {
	m := runChain(t, false)
	checkTimes(t, "inbox task", m, 3)

	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	tc := &exec.TaskContext{JobID: "job", TaskName: "s[0/1]", Parallelism: 1, Alloc: mem,
		Log: slog.New(slog.DiscardHandler), Metrics: &exec.TaskMetrics{}}
	schema := types.Schema{{Name: "x", Type: types.Int64Type}}
	src := &sliceSource{batches: []string{`[{"x": 1}, {"x": 2}]`, `[{"x": 3}]`}, schema: schema, t: t, mem: mem}
	tk := New(tc, src, []exec.Operator{passOp{}, passOp{}}, nil)
	if err := tk.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkTimes(t, "source task", tc.Metrics, 3)
	if got := tc.Metrics.ChainRowsOut(); len(got) != 3 || got[0] != 3 || got[2] != 3 {
		t.Errorf("source task: chain rows %v, want 3 for each", got)
	}
}

func checkTimes(t *testing.T, what string, m *exec.TaskMetrics, n int) {
	t.Helper()
	ns, busy := m.ChainNanos(), m.BusyNanos.Load()
	if len(ns) != n {
		t.Fatalf("%s: times of %d operators %v, want %d", what, len(ns), ns, n)
	}
	var sum int64
	for i, d := range ns {
		if d <= 0 {
			t.Errorf("%s: operator %d has time %d ns, want more than 0 (all: %v)", what, i, d, ns)
		}
		sum += d
	}
	if sum > busy {
		t.Errorf("%s: the operators' times %v add up to %d ns, more than the task's busy %d ns", what, ns, sum, busy)
	}
}

// sliceSource emits its batches, spinning until the clock has moved before
// each, as a source reading its input would take time.
type sliceSource struct {
	batches []string
	schema  types.Schema
	t       *testing.T
	mem     *memory.CheckedAllocator
}

func (s *sliceSource) Open(context.Context, *exec.TaskContext) error { return nil }
func (s *sliceSource) Close() error                                  { return nil }
func (s *sliceSource) Run(ctx context.Context, out exec.Collector) error {
	for _, rows := range s.batches {
		for t0 := time.Now(); time.Since(t0) <= 0; {
		}
		rec := testkit.Record(s.t, s.mem, s.schema, rows)
		err := out.Collect(ctx, exec.Batch{Rec: rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
