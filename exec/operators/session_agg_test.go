package operators

import (
	"context"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestSessionAgg: rows of a key less than the gap (3 s) apart are one
// session, from the first to the last plus the gap, emitted once the
// watermark reaches its end; a row whose own session is behind the watermark
// is late; a restored operator still holds the open sessions; Close frees
// what it held. Expected rows worked by hand. On both state backends: the
// disk one with a cache every batch outgrows, so the sessions close from
// the DB.
func TestSessionAgg(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		t.Run(backend, func(t *testing.T) { sessionAggRun(t, backend) })
	}
}

func sessionAggRun(t *testing.T, backend string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	// k, session start (ts), session end (ts + 3 s)
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "s", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType}}
	out := types.Schema{{Name: "k", Type: types.StringType}, {Name: "s", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType}, {Name: "n", Type: types.Int64Type}}
	cfg := SessionAggConfig{Keys: []int{0}, Start: 1, End: 2, Agg: HashAggConfig{GroupBy: []int{0, 1, 2},
		Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}, StateBackend: backend}
	row := func(k string, sec int) string {
		return `{"k": "` + k + `", "s": "2024-01-01 00:00:` + two(sec) + `", "e": "2024-01-01 00:00:` + two(sec+3) + `"}`
	}
	bs := testkit.Batches(t, mem, in,
		"["+row("a", 0)+","+row("a", 2)+","+row("b", 1)+","+row("a", 10)+"]",
		"["+row("a", 4)+","+row("b", 20)+"]", // a's 4 joins a's 0-2 session (4 < 2 + 3)
		"["+row("a", 1)+","+row("a", 12)+"]") // after the watermark of 8 s: a's 1 is late, 12 joins 10
	defer testkit.Release(bs)
	op := opTestNew(t, "session_agg", cfg, out)
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), 256, t.TempDir()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if on := op.(*sessionAggOp).disk != nil; on != (backend == StateDisk) {
		t.Fatalf("on the disk backend: %t", on)
	}
	c := &testkit.Collector{T: t}
	at := func(sec int) int64 {
		v, _ := time.Parse(time.DateTime, "2024-01-01 00:00:"+two(sec))
		return v.UnixMicro()
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(op.ProcessBatch(ctx, 0, bs[0], c))
	must(op.ProcessBatch(ctx, 0, bs[1], c))
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: at(8)}, c))
	// a: 0, 2, 4 -> [0, 7); b: 1 -> [1, 4); both end by 8.
	testkit.Equal(t, "sessions closed at 8 s", c.Sorted(), []string{
		`["a","2024-01-01T00:00:00","2024-01-01T00:00:07",3]`, `["b","2024-01-01T00:00:01","2024-01-01T00:00:04",1]`})
	must(op.ProcessBatch(ctx, 0, bs[2], c))
	if n := tc.Metrics.LateRows.Load(); n != 1 {
		t.Errorf("%d late rows, want 1", n)
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	must(err)
	// Close frees the sort keys' buffers too: a finished job's operators stay
	// reachable while it is listed.
	if d := op.(*sessionAggOp).disk; d != nil {
		if d.closes == 0 {
			t.Fatal("no session closed from the DB")
		}
	} else if op.(*sessionAggOp).keys.data == nil {
		t.Fatal("no sort keys before Close: the watermark closed no session")
	}
	op.Close(ctx)
	if so := op.(*sessionAggOp); so.keys.data != nil || so.order.data != nil || so.pending != nil {
		t.Error("session_agg holds its rows or sort keys after Close")
	}
	op2 := opTestNew(t, "session_agg", cfg, out)
	must(op2.Open(ctx, tc))
	must(op2.(exec.Checkpointed).RestoreState(ctx, snap))
	c2 := &testkit.Collector{T: t}
	must(op2.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c2))
	testkit.Equal(t, "sessions at end of stream", c2.Sorted(), []string{
		`["a","2024-01-01T00:00:10","2024-01-01T00:00:15",2]`, `["b","2024-01-01T00:00:20","2024-01-01T00:00:23",1]`})
	op2.Close(ctx)
}

func two(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }
