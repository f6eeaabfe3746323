package operators

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
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
	r := newDiskRun(t, mem, stateMemory, "window_topn", cfg, in, func(op *windowTopNOp) *disk.DB { return op.spool.db })
	defer r.Close()
	var evictions, replays int
	counted := func(op *windowTopNOp) { evictions, replays = evictions+op.spool.evictions, replays+op.spool.replays }
	const chunk = 1000
	for w := range windows {
		for lo := 0; lo < rows; lo += chunk {
			var objs []string
			for i := lo; i < lo+chunk; i++ {
				objs = append(objs, fmt.Sprintf(`{"k": "k%03d", "x": %d, "v": %d, "we": "%s"}`, i%keys, x(w, i), i, end(w).Format("2006-01-02 15:04:05")))
			}
			r.Feed(0, in, objs)
			if lo == rows/2 && w > 0 {
				if w == 1 || w == 2 {
					r.Restart(counted)
				}
				r.Watermark(1, end(w-1).UnixMicro()-1)
			}
		}
	}
	r.End(1)
	counted(r.Op)
	testkit.Equal(t, "the windows' tops", r.C.Sorted(), want)
	if evictions == 0 || replays < windows-1 {
		t.Fatalf("%d evictions, %d windows closed from the DB: the test does not test the disk", evictions, replays)
	}
	r.CheckHeld()
	if left := r.DBKeys(); left != 0 {
		t.Fatalf("%d keys left in the DB after every window closed", left)
	}
}
