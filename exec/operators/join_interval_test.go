package operators

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// ijSide is each side of the interval join tests: a key, a time, a value.
var ijSide = types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType}, {Name: "v", Type: types.Int64Type}}

const ijSec = 1_000_000

// ijConfig is l JOIN r ON l.k = r.k AND l.ts BETWEEN r.ts + lo AND r.ts + hi
// (seconds), the time condition as the binder writes it.
func ijConfig(kind string, lo, hi int64) StreamJoinConfig {
	lts := expr.Column(1, types.TimestampType, "ts")
	rts := expr.Column(4, types.TimestampType, "ts")
	at := func(off int64) *expr.Expr {
		return expr.Call("$add_micros", types.TimestampType, rts, expr.Literal(types.Value{Type: types.Int64Type, Int: off * ijSec}))
	}
	extra := expr.Call("and", types.BoolType, expr.Call(">=", types.BoolType, lts, at(lo)), expr.Call("<=", types.BoolType, lts, at(hi)))
	return StreamJoinConfig{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Extra: extra, Left: ijSide, Right: ijSide,
		Interval: &IntervalBounds{LeftTime: 1, RightTime: 1, Lo: lo * ijSec, Hi: hi * ijSec}}
}

type ijRow struct{ k, ts, v int64 }

func ijRecord(mem memory.Allocator, rows []ijRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, ijSide.Arrow())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.k)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		b.Field(2).(*array.Int64Builder).Append(r.v)
	}
	return b.NewRecordBatch()
}

// TestIntervalJoinRandom runs ijRandomRun on both state backends: on the
// disk one with a cache every batch outgrows, so rows go to the DB and come
// back for the watermarks that drop them, and with two seeds of the memory
// one's four (each of its checkpoints and restores is a pebble checkpoint
// and open, which take the most of its time).
func TestIntervalJoinRandom(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		seeds := uint64(4)
		if backend == StateDisk {
			seeds = 2
		}
		for _, kind := range []string{"inner", "left", "right", "full"} {
			for _, b := range [][2]int64{{-10, 0}, {-3, 5}, {2, 6}, {0, 0}} {
				for seed := range seeds {
					t.Run(fmt.Sprintf("%s/%s/%d..%d/%d", backend, kind, b[0], b[1], seed), func(t *testing.T) { ijRandomRun(t, backend, kind, b[0], b[1], seed) })
				}
			}
		}
	}
}

// ijHeld is the rows side s of interval join o holds: on the disk backend,
// those in the DB once the cache's changes are written back.
func ijHeld(t *testing.T, o *streamJoinOp, s int) int {
	t.Helper()
	if o.disk == nil {
		return o.side[s].live
	}
	if err := o.writeBack(); err != nil {
		t.Fatal(err)
	}
	var h heldRows
	if err := o.disk.db.Scan([]byte{byte(s)}, []byte{byte(s + 1)}, func(_, v []byte) error { return h.parse(v) }); err != nil {
		t.Fatal(err)
	}
	return len(h.copies)
}

// ijRandomRun feeds both sides rows in random order (each within 3 seconds
// behind its side's latest, and after its side's watermark, so none is
// late), watermarks 3 seconds behind, barriers and restores; the output must
// be every pair the nested loops find, each once; the state must hold only
// rows a later row can still match; the watermark out must be the least of
// the inputs' less the bounds' reach.
func ijRandomRun(t *testing.T, backend, kind string, lo, hi int64, seed uint64) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(seed, 2))
	cfg := ijConfig(kind, lo, hi)
	cfg.StateBackend = backend
	out := append(slices.Clone(ijSide), ijSide...)
	tc := testkit.TaskContext(mem)
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), 16<<10, t.TempDir()
	evictions := 0
	open := func() exec.Operator {
		op := opTestNew(t, "interval_join", cfg, out)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		if on := op.(*streamJoinOp).disk != nil; on != (backend == StateDisk) {
			t.Fatalf("on the disk backend: %t", on)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	c := &testkit.Collector{T: t}
	var sides [2][]ijRow
	live := [2]map[int64]ijRow{{}, {}}
	latest := [2]int64{20 * ijSec, 20 * ijSec}
	marks := [2]int64{math.MinInt64, math.MinInt64}
	floors := marks // the watermarks before any restore: no row comes at or before them
	lastOut := int64(math.MinInt64)
	v := int64(0)
	for step := range 200 {
		s := rng.IntN(2)
		switch k := rng.IntN(10); {
		case k < 6:
			var rows []ijRow
			for range 1 + rng.IntN(4) {
				ts := latest[s] - 3*ijSec + rng.Int64N(4*ijSec)
				ts -= ts % (ijSec / 2)
				if ts <= floors[s] {
					ts = floors[s] + ijSec/2
				}
				v++
				r := ijRow{k: rng.Int64N(3), ts: ts, v: v}
				rows = append(rows, r)
				sides[s] = append(sides[s], r)
				live[s][r.v] = r
				latest[s] = max(latest[s], ts)
			}
			rec := ijRecord(mem, rows)
			err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec}, c)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
		case k < 8:
			marks[s] = max(marks[s], latest[s]-3*ijSec)
			floors[s] = max(floors[s], marks[s])
			c.Signals = c.Signals[:0]
			if err := op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.Watermark, Watermark: marks[s]}, c); err != nil {
				t.Fatal(err)
			}
			if marks[0] > math.MinInt64 && marks[1] > math.MinInt64 {
				want := min(marks[0], marks[1]) - max(hi, -lo, 0)*ijSec
				if want > lastOut {
					if len(c.Signals) != 1 || c.Signals[0].Watermark != want {
						t.Fatalf("step %d: watermarks %v out, want %d", step, c.Signals, want)
					}
					lastOut = want
				} else if len(c.Signals) != 0 {
					t.Fatalf("step %d: watermarks %v out, want none", step, c.Signals)
				}
			}
			// Each side holds the rows a later row of the other side,
			// after the watermark it has, can match.
			o := op.(*streamJoinOp)
			for side := range 2 {
				if wm := marks[1-side]; wm != math.MinInt64 {
					for v, r := range live[side] {
						if side == 0 && r.ts-lo*ijSec <= wm || side == 1 && r.ts+hi*ijSec <= wm {
							delete(live[side], v)
						}
					}
				}
				if n := ijHeld(t, o, side); n != len(live[side]) {
					t.Fatalf("step %d: side %d holds %d rows, %d can still match", step, side, n, len(live[side]))
				}
			}
		default:
			data, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step)+1)
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				if d := op.(*streamJoinOp).disk; d != nil {
					evictions += d.evictions
				}
				op.Close(ctx)
				op = open()
				if err := op.(exec.Checkpointed).RestoreState(ctx, data); err != nil {
					t.Fatal(err)
				}
				// The watermarks come again after a restart.
				marks = [2]int64{math.MinInt64, math.MinInt64}
				lastOut = math.MinInt64
			}
		}
	}
	for s := range 2 {
		if err := op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
			t.Fatal(err)
		}
	}
	if live := ijHeld(t, op.(*streamJoinOp), 0) + ijHeld(t, op.(*streamJoinOp), 1); live != 0 {
		t.Errorf("%d rows held after both ends", live)
	}
	if d := op.(*streamJoinOp).disk; d != nil {
		if evictions += d.evictions; evictions == 0 {
			t.Fatal("the cache was never written out: the test does not test the disk")
		}
		n := 0
		if err := d.db.Scan(nil, nil, func(_, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d keys in the DB after both ends", n)
		}
	}
	got := map[string]int{}
	for _, r := range c.Rows {
		got[r]++
	}
	want := map[string]int{}
	ts := func(us int64) string { // as testkit.Rows prints it
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
		defer b.Release()
		b.Append(arrow.Timestamp(us))
		a := b.NewArray()
		defer a.Release()
		return testkit.Value(a, 0).(string)
	}
	matched := [2]map[int64]bool{{}, {}}
	for _, l := range sides[0] {
		for _, r := range sides[1] {
			if l.k == r.k && l.ts-r.ts >= lo*ijSec && l.ts-r.ts <= hi*ijSec {
				want[fmt.Sprintf(`[%d,"%s",%d,%d,"%s",%d]`, l.k, ts(l.ts), l.v, r.k, ts(r.ts), r.v)]++
				matched[0][l.v], matched[1][r.v] = true, true
			}
		}
	}
	for _, l := range sides[0] {
		if (kind == "left" || kind == "full") && !matched[0][l.v] {
			want[fmt.Sprintf(`[%d,"%s",%d,null,null,null]`, l.k, ts(l.ts), l.v)]++
		}
	}
	for _, r := range sides[1] {
		if (kind == "right" || kind == "full") && !matched[1][r.v] {
			want[fmt.Sprintf(`[null,null,null,%d,"%s",%d]`, r.k, ts(r.ts), r.v)]++
		}
	}
	for _, r := range c.Rows {
		if strings.Contains(r, "delete") {
			t.Fatalf("a retraction: %s", r)
		}
	}
	if !maps.Equal(got, want) {
		var diff []string
		for r, n := range got {
			if want[r] != n {
				diff = append(diff, fmt.Sprintf("%s: %d, want %d", r, n, want[r]))
			}
		}
		for r, n := range want {
			if _, ok := got[r]; !ok {
				diff = append(diff, fmt.Sprintf("%s: 0, want %d", r, n))
			}
		}
		slices.Sort(diff)
		t.Fatalf("got %d rows, want %d; the first differences:\n%s", len(got), len(want), strings.Join(diff[:min(10, len(diff))], "\n"))
	}
}
