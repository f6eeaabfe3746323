package operators

import (
	"context"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestWatermark: after each batch that raises it, the watermark is the
// largest ts - 4 s so far (NULLs aside); the column the expression alone
// reads is dropped; the watermark is checkpointed.
func TestWatermark(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	in := types.Schema{{Name: "x", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType}}
	bs := testkit.Batches(t, mem, in,
		`[{"x": 1, "ts": "2024-01-01 00:00:10"}, {"x": 2, "ts": "2024-01-01 00:00:30"}, {"x": 3, "ts": null}]`,
		`[{"x": 4, "ts": "2024-01-01 00:00:20"}]`, // behind: no new watermark
		`[{"x": 5, "ts": null}]`,
		`[{"x": 6, "ts": "2024-01-01 00:01:00"}]`)
	defer testkit.Release(bs)
	e := expr.Call("$add_micros", types.TimestampType, expr.Column(1, types.TimestampType, "ts"), expr.Literal(types.IntValue(-4e6)))
	op := opTestNew(t, "watermark", WatermarkConfig{Expr: e, Keep: 1}, in[:1])
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{"[1]", "[2]", "[3]", "[4]", "[5]", "[6]"})
	at := func(s string) int64 {
		v, _ := time.Parse(time.DateTime, s)
		return v.UnixMicro()
	}
	want := []int64{at("2024-01-01 00:00:26"), at("2024-01-01 00:00:56")}
	var got []int64
	for _, s := range c.Signals {
		if s.Kind == exec.Watermark {
			got = append(got, s.Watermark)
		}
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("watermarks %v, want %v", got, want)
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	op2 := opTestNew(t, "watermark", WatermarkConfig{Expr: e, Keep: 1}, in[:1])
	op2.Open(context.Background(), testkit.TaskContext(mem))
	if err := op2.(exec.Checkpointed).RestoreState(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	// Restored, it does not go back: an older upstream watermark is dropped.
	var sink testkit.Collector
	if err := op2.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.Watermark, Watermark: want[0]}, &sink); err != nil || len(sink.Signals) != 0 {
		t.Errorf("an older watermark after the restore: %v, %v", sink.Signals, err)
	}
}

// TestWatermarkProctime: after a PROCTIME() projection the watermark is the
// wall clock, said after each batch and at each tick, never going back;
// event-time watermarks and idleness from upstream are dropped.
func TestWatermarkProctime(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	in := types.Schema{{Name: "x", Type: types.Int64Type}}
	op := opTestNew(t, "watermark", WatermarkConfig{Proctime: true, Keep: 1}, in)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	var sink testkit.Collector
	tk := op.(exec.Ticker)
	t0 := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for _, now := range []time.Time{t0, t0.Add(-time.Second), t0, t0.Add(time.Second)} {
		if err := tk.Tick(ctx, now, &sink); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []exec.Signal{{Kind: exec.Watermark, Watermark: t0.Add(time.Hour).UnixMicro()}, {Kind: exec.Idle}} {
		if err := op.ProcessSignal(ctx, 0, s, &sink); err != nil {
			t.Fatal(err)
		}
	}
	want := []exec.Signal{{Kind: exec.Watermark, Watermark: t0.UnixMicro()}, {Kind: exec.Watermark, Watermark: t0.Add(time.Second).UnixMicro()}}
	if len(sink.Signals) != len(want) || sink.Signals[0] != want[0] || sink.Signals[1] != want[1] {
		t.Errorf("signals after ticks and upstream signals: %v, want %v", sink.Signals, want)
	}
	bs := testkit.Batches(t, mem, in, `[{"x": 1}, {"x": 2}]`)
	defer testkit.Release(bs)
	before := time.Now().UnixMicro()
	sink.Signals = nil
	if err := op.ProcessBatch(ctx, 0, bs[0], &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.Signals) != 1 || sink.Signals[0].Kind != exec.Watermark || sink.Signals[0].Watermark < before {
		t.Errorf("after a batch: %v, want a watermark of the clock (at least %d)", sink.Signals, before)
	}
	testkit.Equal(t, "rows", sink.Rows, []string{"[1]", "[2]"})
}
