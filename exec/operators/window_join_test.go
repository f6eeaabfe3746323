package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestWindowJoin: rows of both sides join per window once the watermark
// reaches the window's last microsecond, whichever side came first; a row of
// a closed window is late. Expected rows worked by hand. On both state
// backends.
func TestWindowJoin(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		t.Run(backend, func(t *testing.T) { windowJoinRun(t, backend) })
	}
}

func windowJoinRun(t *testing.T, backend string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	side := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "e", Type: types.TimestampType}}
	out := append(append(types.Schema{}, side...), side...)
	cfg := WindowJoinConfig{LeftEnd: 1, RightEnd: 1, Join: JoinConfig{Kind: "inner", LeftKeys: []int{0, 1}, RightKeys: []int{0, 1}, Left: side, Right: side},
		StateBackend: backend}
	op := opTestNew(t, "window_join", cfg, out)
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles, tc.SpillDir = stateTestFiles(t), t.TempDir()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	if on := op.(*windowJoinOp).spool != nil; on != (backend == StateDisk) {
		t.Fatalf("on the disk backend: %t", on)
	}
	left := testkit.Batches(t, mem, side,
		`[{"k": 1, "e": "2024-01-01 00:00:10"}, {"k": 2, "e": "2024-01-01 00:00:10"}, {"k": 1, "e": "2024-01-01 00:00:20"}]`,
		`[{"k": 2, "e": "2024-01-01 00:00:10"}]`)
	right := testkit.Batches(t, mem, side,
		`[{"k": 1, "e": "2024-01-01 00:00:10"}, {"k": 1, "e": "2024-01-01 00:00:20"}, {"k": 3, "e": "2024-01-01 00:00:20"}]`)
	defer testkit.Release(left)
	defer testkit.Release(right)
	c := &testkit.Collector{T: t}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(op.ProcessBatch(ctx, 0, left[0], c))
	must(op.ProcessBatch(ctx, 1, right[0], c))
	if len(c.Rows) != 0 {
		t.Fatalf("rows before any window closed: %v", c.Rows)
	}
	wm := int64(1704067210000000) // 2024-01-01 00:00:10
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: wm}, c))
	testkit.Equal(t, "the first window's join", c.Sorted(), []string{`[1,"2024-01-01T00:00:10",1,"2024-01-01T00:00:10"]`})
	must(op.ProcessBatch(ctx, 0, left[1], c)) // its window has closed
	if n := tc.Metrics.LateRows.Load(); n != 1 {
		t.Errorf("%d late rows, want 1", n)
	}
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c))
	must(op.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, c))
	testkit.Equal(t, "after end of stream", c.Sorted(), []string{`[1,"2024-01-01T00:00:10",1,"2024-01-01T00:00:10"]`, `[1,"2024-01-01T00:00:20",1,"2024-01-01T00:00:20"]`})
}
