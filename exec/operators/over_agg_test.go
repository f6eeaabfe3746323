package operators

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// overIn is the input of the over_agg tests: a partition, a time, a value
// and the time less 10 seconds (a RANGE frame's start, as the planner
// computes it below the window).
var overIn = types.Schema{{Name: "p", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType},
	{Name: "v", Type: types.Float64Type}, {Name: "sb", Type: types.TimestampType}}

const overReach = 10_000_000 // the RANGE frame's 10 seconds, in microseconds

// overConfig is SUM(v) and COUNT(v) over ROWS BETWEEN 3 PRECEDING AND
// CURRENT ROW, MAX(v) over RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND
// CURRENT ROW, by p, ordered by ts.
func overConfig() (OverAggConfig, types.Schema) {
	rows := WindowFrame{Rows: true, Start: -3}
	rng := WindowFrame{StartOffset: true, RangeKey: 1, StartBound: 3}
	cfg := OverAggConfig{Window: WindowConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1}},
		Funcs: []WindowFuncSpec{
			{Func: "sum", Args: []int{2}, Default: -1, Frame: rows, Type: types.Float64Type},
			{Func: "count", Args: []int{2}, Default: -1, Frame: rows, Type: types.Int64Type},
			{Func: "max", Args: []int{2}, Default: -1, Frame: rng, Type: types.Float64Type},
		}}}
	out := append(slices.Clone(overIn), types.Field{Name: "s", Type: types.Float64Type},
		types.Field{Name: "c", Type: types.Int64Type}, types.Field{Name: "m", Type: types.Float64Type})
	return cfg, out
}

type overRow struct {
	p, ts int64
	v     float64
	seq   int // arrival order
}

func overRecord(mem memory.Allocator, rows []overRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, overIn.Arrow())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.p)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		b.Field(2).(*array.Float64Builder).Append(r.v)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts - overReach))
	}
	return b.NewRecordBatch()
}

// overExpected computes, from scratch, each row's output line: its frame's
// rows found by scanning its partition in (time, arrival) order.
func overExpected(rows []overRow) []string {
	byP := map[int64][]overRow{}
	for _, r := range rows {
		byP[r.p] = append(byP[r.p], r)
	}
	var out []string
	for _, ps := range byP {
		slices.SortStableFunc(ps, func(a, b overRow) int {
			if a.ts != b.ts {
				return int(a.ts - b.ts)
			}
			return a.seq - b.seq
		})
		for i, r := range ps {
			s, c := 0.0, 0
			for j := max(0, i-3); j <= i; j++ {
				s += ps[j].v
				c++
			}
			m := math.Inf(-1)
			for _, q := range ps {
				if q.ts >= r.ts-overReach && q.ts <= r.ts {
					m = max(m, q.v)
				}
			}
			out = append(out, overLine(r.p, r.ts, r.v, s, int64(c), m))
		}
	}
	slices.Sort(out)
	return out
}

func overLine(p, ts int64, v, s float64, c int64, m float64) string {
	return fmt.Sprintf("%d %d %g %g %d %g", p, ts, v, s, c, m)
}

// overCollect reads the operator's rows as overLine, checking each comes
// after the watermark passed its time (mark, from the test) and after the
// rows of its partition before it.
type overCollect struct {
	t     *testing.T
	lines []string
	mark  *int64
	last  map[int64]int64
}

func (c *overCollect) Collect(ctx context.Context, b exec.Batch) error {
	rec := b.Rec
	if b.Ops != nil {
		c.t.Fatalf("over_agg emitted change kinds %v", b.Ops)
	}
	for i := range int(rec.NumRows()) {
		p := rec.Column(0).(*array.Int64).Value(i)
		ts := int64(rec.Column(1).(*array.Timestamp).Value(i))
		if ts > *c.mark {
			c.t.Fatalf("row at %d out before the watermark passed it (%d)", ts, *c.mark)
		}
		if last, ok := c.last[p]; ok && ts < last {
			c.t.Fatalf("partition %d: row at %d after one at %d", p, ts, last)
		}
		c.last[p] = ts
		c.lines = append(c.lines, overLine(p, ts, rec.Column(2).(*array.Float64).Value(i), rec.Column(4).(*array.Float64).Value(i),
			rec.Column(5).(*array.Int64).Value(i), rec.Column(6).(*array.Float64).Value(i)))
	}
	return nil
}

func (c *overCollect) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }

func TestOverAggRandom(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { overRandomRun(t, seed) })
	}
}

func overRandomRun(t *testing.T, seed uint64) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(seed, 6))
	cfg, out := overConfig()
	open := func() exec.Operator {
		op := opTestNew(t, "over_agg", cfg, out)
		if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	mark := int64(math.MinInt64)
	c := &overCollect{t: t, mark: &mark, last: map[int64]int64{}}
	var accepted []overRow
	seq, maxTS, restores := 0, int64(0), 0
	for step := range 150 {
		switch k := rng.IntN(10); {
		case k < 6: // rows, a few late
			var rows []overRow
			for range 1 + rng.IntN(6) {
				ts := maxTS - 3_000_000 + rng.Int64N(5_000_000) // up to 3 s behind the latest
				ts -= ts % 500_000                              // ties in time
				r := overRow{p: rng.Int64N(3), ts: ts, v: float64(rng.IntN(100)), seq: seq}
				seq++
				rows = append(rows, r)
				if ts > mark {
					accepted = append(accepted, r)
				}
				maxTS = max(maxTS, ts)
			}
			rec := overRecord(mem, rows)
			err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
		case k < 8: // a watermark 2 s behind the latest time
			if w := maxTS - 2_000_000; w > mark {
				mark = w
			}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: mark}, c); err != nil {
				t.Fatal(err)
			}
			// The state: rows not out yet, and of those out at most 3 a
			// partition and those within 10 s of the watermark.
			o := op.(*overAggOp)
			bound := 0
			for _, r := range accepted {
				if r.ts > mark || r.ts >= mark-overReach {
					bound++
				}
			}
			if len(o.times) > bound+3*3 {
				t.Fatalf("step %d: %d rows kept, at most %d needed", step, len(o.times), bound+9)
			}
		default: // a barrier, sometimes a restore from its checkpoint
			data, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step))
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				op.Close(ctx)
				op = open()
				if err := op.(exec.Checkpointed).RestoreState(ctx, data); err != nil {
					t.Fatal(err)
				}
				restores++
			}
		}
	}
	mark = math.MaxInt64
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(c.lines))
	want := overExpected(accepted)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d rows, want %d\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if restores == 0 {
		t.Logf("no restore in this run")
	}
}
