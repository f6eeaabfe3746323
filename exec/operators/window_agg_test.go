package operators

import (
	"context"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestWindowAgg: each window's groups come out once, when the watermark
// reaches the window's last microsecond, and before the watermark goes on;
// a row of a closed window is dropped and counted; a restored operator has
// the open windows; end of stream closes them. The expected rows are counted
// by hand from the input.
func TestWindowAgg(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "window_end", Type: types.TimestampType}, {Name: "v", Type: types.Int64Type}}
	out := types.Schema{{Name: "k", Type: types.StringType}, {Name: "window_end", Type: types.TimestampType},
		{Name: "n", Type: types.Int64Type}, {Name: "s", Type: types.Int64Type}}
	cfg := WindowAggConfig{End: 1, Agg: HashAggConfig{GroupBy: []int{0, 1}, Aggs: []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 2, Type: types.Int64Type}}}}
	sec := func(s float64) int64 {
		base, _ := time.Parse(time.DateTime, "2024-01-01 00:00:00")
		return base.UnixMicro() + int64(s*1e6)
	}
	bs := testkit.Batches(t, mem, in,
		`[{"k": "a", "window_end": "2024-01-01 00:00:10", "v": 1}, {"k": "b", "window_end": "2024-01-01 00:00:10", "v": 2},
		  {"k": "a", "window_end": "2024-01-01 00:00:20", "v": 3}]`,
		`[{"k": "a", "window_end": "2024-01-01 00:00:10", "v": 4}]`,
		`[{"k": "b", "window_end": "2024-01-01 00:00:10", "v": 9}, {"k": "b", "window_end": "2024-01-01 00:00:20", "v": 1},
		  {"k": "c", "window_end": null, "v": 7}]`)
	defer testkit.Release(bs)
	op := opTestNew(t, "window_agg", cfg, out)
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	c := &testkit.Collector{T: t}
	step := func(b *exec.Batch, wm float64) {
		t.Helper()
		var err error
		if b != nil {
			err = op.ProcessBatch(ctx, 0, *b, c)
		} else {
			err = op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: sec(wm)}, c)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	step(&bs[0], 0)
	step(nil, 9.999998) // the window ending at 10 s has a microsecond to go
	step(&bs[1], 0)
	if len(c.Rows) != 0 {
		t.Fatalf("rows before the window closed: %v", c.Rows)
	}
	step(nil, 9.999999)
	testkit.Equal(t, "rows at the watermark", c.Sorted(), []string{`["a","2024-01-01T00:00:10",2,5]`, `["b","2024-01-01T00:00:10",1,2]`})
	if n := len(c.Signals); n != 2 || c.Signals[1].Watermark != sec(9.999999) {
		t.Errorf("signals %v, want both watermarks forwarded", c.Signals)
	}
	step(&bs[2], 0)
	if n := tc.Metrics.LateRows.Load(); n != 2 {
		t.Errorf("%d late rows, want 2 (b's row of the closed window, and c's without one)", n)
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	op.Close(ctx)

	op2 := opTestNew(t, "window_agg", cfg, out)
	if err := op2.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	if err := op2.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	c2 := &testkit.Collector{T: t}
	// The restored watermark holds: a row of the closed window is still late.
	if err := op2.ProcessBatch(ctx, 0, bs[1], c2); err != nil {
		t.Fatal(err)
	}
	if err := op2.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c2); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows at end of stream", c2.Sorted(), []string{`["a","2024-01-01T00:00:20",1,3]`, `["b","2024-01-01T00:00:20",1,1]`})
	if len(c2.Signals) != 1 || c2.Signals[0].Kind != exec.EndOfStream {
		t.Errorf("signals %v, want the end of stream", c2.Signals)
	}
	op2.Close(ctx)
}
