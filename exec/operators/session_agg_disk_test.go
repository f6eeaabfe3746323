package operators

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestSessionAggDiskLarge: count(*) and sum(v) per key and session window
// (a gap of 3 s) on the disk backend, whose open sessions' rows take more
// than four times its --state-memory (128 KiB): 60000 rows at 5000 a second
// of event time, each up to a second behind the clock, over keys that come
// and go (a key is active for about 8 s at a time); watermarks a second
// behind the latest row every 480 rows; checkpointed twice (the second
// incremental on the first) with the operator restored from each into a
// fresh one. The rows out must be exactly the sessions found here by
// sorting each key's times and merging those less than the gap apart; the
// cache must have been written to the DB, sessions closed from it, and the
// DB must end empty.
func TestSessionAggDiskLarge(t *testing.T) {
	if raceDetector {
		t.Skip("millions of rows through pebble are minutes under the race detector; the operator's random tests run the same code under it")
	}
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const rows, chunk, stateMemory = 60000, 480, 128 << 10
	const sec = int64(time.Second / time.Microsecond)
	const gap = 3 * sec
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "s", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType},
		{Name: "v", Type: types.Int64Type}}
	out := types.Schema{{Name: "k", Type: types.StringType}, {Name: "s", Type: types.TimestampType}, {Name: "e", Type: types.TimestampType},
		{Name: "n", Type: types.Int64Type}, {Name: "sum", Type: types.Int64Type}}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	text := func(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.999999") }

	rng := rand.New(rand.NewPCG(27, 1))
	type row struct {
		k  int
		ts int64
	}
	all := make([]row, rows)
	for i := range all {
		clock := base + int64(i)*sec/5000
		// Keys 100 wide of 2000 move on by 50 every 2 s.
		all[i] = row{k: (int((clock-base)/(2*sec))*50 + rng.IntN(400)) % 2000, ts: clock - rng.Int64N(sec)}
	}

	// The reference: each key's rows by time, merged into sessions.
	byKey := map[int][]int{}
	for i, r := range all {
		byKey[r.k] = append(byKey[r.k], i)
	}
	var want []string
	for k, is := range byKey {
		slices.SortStableFunc(is, func(a, b int) int { return int(all[a].ts - all[b].ts) })
		for lo := 0; lo < len(is); {
			s, e := all[is[lo]].ts, all[is[lo]].ts+gap
			n, sum := 0, 0
			hi := lo
			for ; hi < len(is) && all[is[hi]].ts < e; hi++ {
				e = max(e, all[is[hi]].ts+gap)
				n, sum = n+1, sum+is[hi]
			}
			want = append(want, fmt.Sprintf(`["k%04d","%s","%s",%d,%d]`, k, text(s), text(e), n, sum))
			lo = hi
		}
	}
	slices.Sort(want)

	cfg := SessionAggConfig{Keys: []int{0}, Start: 1, End: 2, StateBackend: StateDisk, Agg: HashAggConfig{GroupBy: []int{0, 1, 2},
		Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 3, Type: types.Int64Type}}}}
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	open := func() *sessionAggOp {
		op := opTestNew(t, "session_agg", cfg, out).(*sessionAggOp)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c := &testkit.Collector{T: t}
	var evictions, closes int
	var held int64
	latest := int64(0)
	for lo := 0; lo < rows; lo += chunk {
		var objs []string
		for i := lo; i < min(rows, lo+chunk); i++ {
			r := all[i]
			latest = max(latest, r.ts)
			objs = append(objs, fmt.Sprintf(`{"k": "k%04d", "s": "%s", "e": "%s", "v": %d}`, r.k, text(r.ts), text(r.ts+gap), i))
		}
		rec := testkit.Record(t, mem, in, "["+strings.Join(objs, ",")+"]")
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c)
		rec.Release()
		must(err)
		must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: latest - sec}, c))
		if n := lo / chunk; n == 40 || n == 85 {
			data, err := op.SnapshotState(ctx, int64(lo+chunk))
			must(err)
			var n int64
			must(op.disk.db.Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
			held = max(held, n)
			evictions += op.disk.evictions
			closes += op.disk.closes
			op.Close(ctx)
			op = open()
			must(op.RestoreState(ctx, data))
		}
	}
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c))
	evictions += op.disk.evictions
	closes += op.disk.closes
	if n := tc.Metrics.LateRows.Load(); n != 0 {
		t.Fatalf("%d late rows", n)
	}
	testkit.Equal(t, "the sessions", c.Sorted(), want)
	if evictions == 0 || closes == 0 {
		t.Fatalf("%d evictions, %d watermarks closing sessions from the DB: the test does not test the disk", evictions, closes)
	}
	if held < 4*stateMemory {
		t.Fatalf("the DB held at most %d bytes, not four times the %d of --state-memory", held, stateMemory)
	}
	left := 0
	must(op.disk.db.Scan(nil, nil, func(_, _ []byte) error { left++; return nil }))
	if left != 0 {
		t.Fatalf("%d keys left in the DB after every session closed", left)
	}
}
