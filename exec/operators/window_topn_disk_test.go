package operators

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestWindowTopNDiskLarge: the top 3 rows by x of each window and key on
// the disk backend, whose open windows hold more than four times its
// --state-memory (128 KiB): four tumbling windows of 20000 rows over 500
// keys, x a permutation (no ties), each window fed while the one before is
// still open and closed by a watermark halfway through the next;
// checkpointed twice (the second incremental on the first) with the operator
// restored from each into a fresh one. The rows out must be exactly each
// window and key's three largest x, found by sorting here; the cache must
// have been written to the DB, windows closed from it, and the DB must end
// empty.
func TestWindowTopNDiskLarge(t *testing.T) {
	if raceDetector {
		t.Skip("millions of rows through pebble are minutes under the race detector; the operator's random tests run the same code under it")
	}
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const windows, rows, keys, top = 4, 20000, 500, 3
	const stateMemory = 128 << 10
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type},
		{Name: "we", Type: types.TimestampType}}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	end := func(w int) time.Time { return base.Add(time.Duration(w+1) * 10 * time.Second) }
	x := func(w, i int) int64 { return int64(w*100000 + (i*7919)%rows) }

	// The reference: each window and key's rows sorted by x, descending.
	var want []string
	for w := range windows {
		byKey := map[int][]int{}
		for i := range rows {
			byKey[i%keys] = append(byKey[i%keys], i)
		}
		for k, is := range byKey {
			slices.SortFunc(is, func(a, b int) int { return int(x(w, b) - x(w, a)) })
			for _, i := range is[:top] {
				want = append(want, fmt.Sprintf(`["k%03d",%d,%d,"%s"]`, k, x(w, i), i, end(w).Format("2006-01-02T15:04:05")))
			}
		}
	}
	slices.Sort(want)

	cfg := WindowTopNConfig{TopN: TopNConfig{Partition: []int{3, 0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: top},
		End: 3, StateBackend: StateDisk}
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	open := func() *windowTopNOp {
		op := opTestNew(t, "window_topn", cfg, in).(*windowTopNOp)
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
	var evictions, replays int
	var held int64
	checkpoint := int64(0)
	const chunk = 1000
	for w := range windows {
		for lo := 0; lo < rows; lo += chunk {
			var objs []string
			for i := lo; i < lo+chunk; i++ {
				objs = append(objs, fmt.Sprintf(`{"k": "k%03d", "x": %d, "v": %d, "we": "%s"}`, i%keys, x(w, i), i, end(w).Format("2006-01-02 15:04:05")))
			}
			rec := testkit.Record(t, mem, in, "["+strings.Join(objs, ",")+"]")
			err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c)
			rec.Release()
			must(err)
			if lo == rows/2 && w > 0 {
				if w == 1 || w == 2 {
					checkpoint++
					data, err := op.SnapshotState(ctx, checkpoint)
					must(err)
					var n int64
					must(op.spool.db.Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
					held = max(held, n)
					evictions += op.spool.evictions
					replays += op.spool.replays
					op.Close(ctx)
					op = open()
					must(op.RestoreState(ctx, data))
				}
				must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: end(w-1).UnixMicro() - 1}, c))
			}
		}
	}
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c))
	evictions += op.spool.evictions
	replays += op.spool.replays
	testkit.Equal(t, "the windows' tops", c.Sorted(), want)
	if evictions == 0 || replays < windows-1 {
		t.Fatalf("%d evictions, %d windows closed from the DB: the test does not test the disk", evictions, replays)
	}
	if held < 4*stateMemory {
		t.Fatalf("the DB held at most %d bytes, not four times the %d of --state-memory", held, stateMemory)
	}
	left := 0
	must(op.spool.db.Scan(nil, nil, func(_, _ []byte) error { left++; return nil }))
	if left != 0 {
		t.Fatalf("%d keys left in the DB after every window closed", left)
	}
}
