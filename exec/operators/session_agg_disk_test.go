package operators

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
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
	r := newDiskRun(t, mem, stateMemory, "session_agg", cfg, out, func(op *sessionAggOp) *disk.DB { return op.disk.db })
	defer r.Close()
	var evictions, closes int
	counted := func(op *sessionAggOp) { evictions, closes = evictions+op.disk.evictions, closes+op.disk.closes }
	latest := int64(0)
	for lo := 0; lo < rows; lo += chunk {
		var objs []string
		for i := lo; i < min(rows, lo+chunk); i++ {
			r := all[i]
			latest = max(latest, r.ts)
			objs = append(objs, fmt.Sprintf(`{"k": "k%04d", "s": "%s", "e": "%s", "v": %d}`, r.k, text(r.ts), text(r.ts+gap), i))
		}
		r.Feed(0, in, objs)
		r.Watermark(1, latest-sec)
		if n := lo / chunk; n == 40 || n == 85 {
			r.Restart(counted)
		}
	}
	r.End(1)
	counted(r.Op)
	if n := r.TC.Metrics.LateRows.Load(); n != 0 {
		t.Fatalf("%d late rows", n)
	}
	testkit.Equal(t, "the sessions", r.C.Sorted(), want)
	if evictions == 0 || closes == 0 {
		t.Fatalf("%d evictions, %d watermarks closing sessions from the DB: the test does not test the disk", evictions, closes)
	}
	r.CheckHeld()
	if left := r.DBKeys(); left != 0 {
		t.Fatalf("%d keys left in the DB after every session closed", left)
	}
}
