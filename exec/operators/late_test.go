package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// lateOut is the late-rows table of these tests: the late row's k and ts,
// the watermark, the operator.
var lateOut = types.Schema{{Name: "ts", Type: types.TimestampType}, {Name: "k", Type: types.StringType},
	{Name: "late_watermark", Type: types.TimestampType}, {Name: "late_operator", Type: types.StringType}}

// TestLateRowsOut: a windowed operator (or first-row deduplication) with a LateConfig sends the rows it
// finds late to its task's late output, as the late-rows table's columns
// (input columns picked by the config, the watermark it had, its name), and
// still counts them; the rows it keeps are not sent. Each case's input is
// k, ts, then what the operator needs; by hand: after the watermark of 10 s,
// the row at 5 s is late for each, the one at 15 s is not (nor, for the
// window aggregations, is its window [10, 20) closed).
func TestLateRowsOut(t *testing.T) {
	over, overOut := overConfig()
	cases := []struct {
		kind string
		in   types.Schema
		cfg  func(late *LateConfig) any
		out  types.Schema
		rows string // a row at 5 s, then one at 15 s
	}{{
		kind: "window_agg",
		in:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}, {Name: "window_end", Type: types.TimestampType}},
		cfg: func(late *LateConfig) any {
			return WindowAggConfig{End: 1, Late: late, Agg: HashAggConfig{GroupBy: []int{0, 2},
				Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}}
		},
		out: types.Schema{{Name: "k", Type: types.StringType}, {Name: "window_end", Type: types.TimestampType}, {Name: "n", Type: types.Int64Type}},
		rows: `[{"k": "a", "ts": "2024-01-01 00:00:05", "window_end": "2024-01-01 00:00:10"},
		        {"k": "b", "ts": "2024-01-01 00:00:15", "window_end": "2024-01-01 00:00:20"}]`,
	}, {
		kind: "session_agg",
		in:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType}},
		cfg: func(late *LateConfig) any {
			return SessionAggConfig{Keys: []int{0}, Start: 1, End: 2, Late: late, Agg: HashAggConfig{GroupBy: []int{0, 1, 2},
				Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}}
		},
		out: types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType}, {Name: "n", Type: types.Int64Type}},
		// Sessions of 3 s: the one of 5 s ends at 8 s, behind the watermark.
		rows: `[{"k": "a", "ts": "2024-01-01 00:00:05", "e": "2024-01-01 00:00:08"},
		        {"k": "b", "ts": "2024-01-01 00:00:15", "e": "2024-01-01 00:00:18"}]`,
	}, {
		kind: "window_topn",
		in:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}, {Name: "window_end", Type: types.TimestampType}},
		cfg: func(late *LateConfig) any {
			return WindowTopNConfig{End: 2, Late: late, TopN: TopNConfig{Partition: []int{0, 2}, Order: []SortKeySpec{{Col: 1}}, Lo: 1, Hi: 1}}
		},
		out: types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}, {Name: "window_end", Type: types.TimestampType}},
		rows: `[{"k": "a", "ts": "2024-01-01 00:00:05", "window_end": "2024-01-01 00:00:10"},
		        {"k": "b", "ts": "2024-01-01 00:00:15", "window_end": "2024-01-01 00:00:20"}]`,
	}, {
		kind: "topn", // first-row deduplication by event time
		in:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}},
		cfg: func(late *LateConfig) any {
			return TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1}}, Lo: 1, Hi: 1, First: true, Late: late}
		},
		out:  types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}},
		rows: `[{"k": "a", "ts": "2024-01-01 00:00:05"}, {"k": "b", "ts": "2024-01-01 00:00:15"}]`,
	}, {
		kind: "over_agg",
		in:   overIn,
		cfg:  func(late *LateConfig) any { c := over; c.Late = late; return c },
		out:  overOut,
		rows: `[{"p": 1, "ts": "2024-01-01 00:00:05", "v": 1, "sb": "2023-12-31 23:59:55"},
		        {"p": 2, "ts": "2024-01-01 00:00:15", "v": 2, "sb": "2024-01-01 00:00:05"}]`,
	}}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			ts, k := 1, 0
			want := []string{`["2024-01-01T00:00:05","a","2024-01-01T00:00:10","` + c.kind + ` here"]`}
			if c.kind == "over_agg" { // its first column is p, a bigint
				want = []string{`["2024-01-01T00:00:05",1,"2024-01-01T00:00:10","over_agg here"]`}
			}
			table := lateOut
			if c.in[k].Type.ID != types.String {
				table = types.Schema{lateOut[0], {Name: "p", Type: c.in[k].Type}, lateOut[2], lateOut[3]}
			}
			late := &LateConfig{Cols: []int{ts, k, LateWatermark, LateOperator}, Out: table, Operator: c.kind + " here"}
			op := opTestNew(t, c.kind, c.cfg(late), c.out)
			if l, ok := op.(exec.LateEmitter); !ok || !l.EmitsLate() {
				t.Fatalf("%s with a LateConfig does not say it emits late rows", c.kind)
			}
			tc := testkit.TaskContext(mem)
			tc.Metrics = &exec.TaskMetrics{}
			lateRows := &testkit.Collector{T: t}
			tc.Late = lateRows
			if err := op.Open(ctx, tc); err != nil {
				t.Fatal(err)
			}
			defer op.Close(ctx)
			bs := testkit.Batches(t, mem, c.in, c.rows)
			defer testkit.Release(bs)
			out := &testkit.Collector{T: t}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: lateSec(10)}, out); err != nil {
				t.Fatal(err)
			}
			if err := op.ProcessBatch(ctx, 0, bs[0], out); err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "late rows", lateRows.Rows, want)
			if n := tc.Metrics.LateRows.Load(); n != 1 {
				t.Errorf("%d late rows counted, want 1", n)
			}
		})
	}
}

// TestLateRowsFinalPhase: a final window aggregation reads partial
// aggregates, never late rows: it ignores a LateConfig.
func TestLateRowsFinalPhase(t *testing.T) {
	cfg := WindowAggConfig{End: 0, Late: &LateConfig{Cols: []int{0}, Out: lateOut[:1]}, Agg: HashAggConfig{GroupBy: []int{0}, Phase: AggFinal,
		Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}}
	op := opTestNew(t, "window_agg", cfg, types.Schema{{Name: "window_end", Type: types.TimestampType}, {Name: "n", Type: types.Int64Type}})
	if op.(exec.LateEmitter).EmitsLate() {
		t.Error("a final window_agg says it emits late rows")
	}
}

// lateSec is 2024-01-01 00:00:s in microseconds since the epoch.
func lateSec(s int64) int64 { return 1704067200_000_000 + s*1_000_000 }
