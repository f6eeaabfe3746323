package operators

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// aggUpdatesRun feeds batches to op, flushing after each; flushes[i] says
// whether to flush after batch i (nil: after every batch).
func aggUpdatesRun(t *testing.T, op exec.Operator, out exec.Collector, batches []exec.Batch, flushes []bool) {
	t.Helper()
	ctx := context.Background()
	for i, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, out); err != nil {
			t.Fatal(err)
		}
		if flushes == nil || flushes[i] {
			if err := op.(exec.Flusher).Flush(ctx, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, out); err != nil {
		t.Fatal(err)
	}
}

func TestHashAggUpdates(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
	}
	out := aggTestOut(types.StringType, types.Int64Type, aggTestDec0)
	cfg := HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Emit: AggEmitUpdates}
	batches := testkit.Batches(t, mem, aggTestIn,
		`[{"k": "a", "x": 1}, {"k": "a", "x": 2}, {"k": "b", "x": 5}]`,
		`[{"k": "a", "x": 4}, {"k": "b", "x": 5}]`,
		`[{"k": "b", "x": 1}]`,
		`[{"k": "c", "x": 1}, {"k": "c", "x": 1}]`)
	defer testkit.Release(batches)
	batches[1].Ops = []exec.ChangeKind{exec.Insert, exec.Delete}
	batches[3].Ops = []exec.ChangeKind{exec.Insert, exec.Delete}

	op := opTestNew(t, "hash_agg", cfg, out)
	if err := op.Open(context.Background(), testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	c := &testkit.Collector{T: t}
	aggUpdatesRun(t, op, c, batches, nil)
	testkit.Equal(t, "changes", c.Rows, []string{
		`["a",2,"3"]`,
		`["b",1,"5"]`,
		// The old rows first, then the new ones; b lost its only row.
		`update_before ["a",2,"3"]`,
		`delete ["b",1,"5"]`,
		`update_after ["a",3,"7"]`,
		// b is back, as a new row; c came and went within one flush: nothing.
		`["b",1,"1"]`,
	})
	if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
		t.Errorf("signals %v, want end of stream", c.Signals)
	}
}

// TestHashAggUpdatesDistinct: COUNT(DISTINCT x) emitting updates (a
// streaming aggregation, Nexmark's q15-q17) counts a value while any of its
// rows is left: a retraction of one of two equal values changes nothing, of
// the last one lowers the count; SUM(DISTINCT x) likewise adds a value once
// and takes it back with its last row (counted by hand below).
func TestHashAggUpdatesDistinct(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	aggs := []AggSpec{{Func: "count", Arg: 2, Distinct: true, Type: types.Int64Type}, {Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Distinct: true, Type: aggTestDec0}}
	out := aggTestOut(types.StringType, types.Int64Type, types.Int64Type, aggTestDec0)
	cfg := HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Emit: AggEmitUpdates}
	batches := testkit.Batches(t, mem, aggTestIn,
		`[{"k": "a", "x": 1}, {"k": "a", "x": 1}, {"k": "a", "x": 2}, {"k": "b", "x": null}]`,
		`[{"k": "a", "x": 1}]`,
		`[{"k": "a", "x": 1}, {"k": "b", "x": 7}]`)
	defer testkit.Release(batches)
	batches[1].Ops = []exec.ChangeKind{exec.Delete}
	batches[2].Ops = []exec.ChangeKind{exec.Delete, exec.Insert}
	op := opTestNew(t, "hash_agg", cfg, out)
	if err := op.Open(context.Background(), testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	c := &testkit.Collector{T: t}
	aggUpdatesRun(t, op, c, batches, nil)
	testkit.Equal(t, "changes", c.Rows, []string{
		`["a",2,3,"3"]`,
		`["b",0,1,null]`,
		// One of the two 1s goes: still two distinct values, 1 + 2.
		`update_before ["a",2,3,"3"]`,
		`update_after ["a",2,2,"3"]`,
		// The last 1 goes: 2 left; b's first non-NULL value.
		`update_before ["a",2,2,"3"]`,
		`update_before ["b",0,1,null]`,
		`update_after ["a",1,1,"2"]`,
		`update_after ["b",1,2,"7"]`,
	})
}

func TestHashAggUpdatesNoGroupBy(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	cfg := HashAggConfig{Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}, Emit: AggEmitUpdates}
	out := aggTestOut(types.Int64Type)

	// Without input it ends with its one row, as a bounded aggregate does.
	op := opTestNew(t, "hash_agg", cfg, out)
	c, err := testkit.Run(t, op, mem)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "no input", c.Rows, []string{`[0]`})

	batches := testkit.Batches(t, mem, aggTestIn, `[{"k": "a"}, {"k": "b"}]`, `[{"k": "a"}]`)
	defer testkit.Release(batches)
	batches[1].Ops = []exec.ChangeKind{exec.Delete}
	op = opTestNew(t, "hash_agg", cfg, out)
	if err := op.Open(context.Background(), testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	c = &testkit.Collector{T: t}
	aggUpdatesRun(t, op, c, batches, nil)
	// The single group is never deleted, even when its count drops.
	testkit.Equal(t, "changes", c.Rows, []string{`[2]`, `update_before [2]`, `update_after [1]`})
}

// TestHashAggUpdatesProperty: a random stream of inserts and of deletes of
// earlier inserted rows, flushed at random points, through a complete
// aggregation and (inserts only, since a partial aggregation refuses
// retractions) through partial -> final. Applying each output changelog to a
// multiset must never retract a row that is not there, and must end equal to the
// bounded aggregation of the rows left.
func TestHashAggUpdatesProperty(t *testing.T) {
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 2, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
	}
	keys := []int{0, 1}
	out := aggTestOut(types.StringType, types.Int64Type, types.Int64Type, types.Int64Type, aggTestDec0, types.Float64Type)
	groupCols := types.Schema{aggTestIn[0], aggTestIn[1]}
	partialOut := PartialUpdatesSchema(groupCols, aggs, aggTestIn)
	for seed := range uint64(40) {
		deletes := seed%2 == 0
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(seed, 7))
			var live []string // rows inserted and not deleted, as JSON objects
			var batches []exec.Batch
			var flushes []bool
			for range 1 + rng.IntN(12) {
				var rows []string
				var ops []exec.ChangeKind
				for range 1 + rng.IntN(20) {
					if deletes && len(live) > 0 && rng.IntN(3) == 0 {
						i := rng.IntN(len(live))
						rows = append(rows, live[i])
						live = slices.Delete(live, i, i+1)
						ops = append(ops, []exec.ChangeKind{exec.Delete, exec.UpdateBefore}[rng.IntN(2)])
						continue
					}
					x := "null"
					if rng.IntN(4) > 0 {
						x = fmt.Sprint(rng.IntN(100) - 50)
					}
					r := fmt.Sprintf(`{"k": "%c", "g": %d, "x": %s}`, 'a'+rng.IntN(4), rng.IntN(2), x)
					rows = append(rows, r)
					live = append(live, r)
					ops = append(ops, exec.Insert)
				}
				b := testkit.Batches(t, mem, aggTestIn, "["+strings.Join(rows, ",")+"]")[0]
				b.Ops = ops
				batches = append(batches, b)
				flushes = append(flushes, rng.IntN(2) == 0)
			}
			defer testkit.Release(batches)

			// The reference: a bounded aggregation of the rows left.
			want := []string{}
			if len(live) > 0 {
				net := testkit.Batches(t, mem, aggTestIn, "["+strings.Join(live, ",")+"]")
				c, err := testkit.Run(t, opTestNew(t, "hash_agg", HashAggConfig{GroupBy: keys, Aggs: aggs}, out), mem, net...)
				testkit.Release(net)
				if err != nil {
					t.Fatal(err)
				}
				want = c.Sorted()
			}

			ctx := context.Background()
			// Complete phase.
			complete := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: keys, Aggs: aggs, Emit: AggEmitUpdates}, out)
			if err := complete.Open(ctx, testkit.TaskContext(mem)); err != nil {
				t.Fatal(err)
			}
			view := &aggTestView{t: t}
			aggUpdatesRun(t, complete, view, batches, flushes)
			complete.Close(ctx)
			testkit.Equal(t, "complete", view.rows(), want)
			if deletes {
				return
			}

			// Partial, flushed into final, which is flushed after it.
			partial := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: keys, Aggs: aggs, Phase: AggPartial, Emit: AggEmitUpdates}, partialOut)
			final := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0, 1}, Aggs: aggs, Phase: AggFinal, Emit: AggEmitUpdates}, out)
			for _, op := range []exec.Operator{partial, final} {
				if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
					t.Fatal(err)
				}
				defer op.Close(ctx)
			}
			view = &aggTestView{t: t}
			toFinal := testkit.Func(func(b exec.Batch) error { return final.ProcessBatch(ctx, 0, b, view) })
			for i, b := range batches {
				if err := partial.ProcessBatch(ctx, 0, b, toFinal); err != nil {
					t.Fatal(err)
				}
				if flushes[i] {
					if err := partial.(exec.Flusher).Flush(ctx, toFinal); err != nil {
						t.Fatal(err)
					}
					if err := final.(exec.Flusher).Flush(ctx, view); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := partial.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, toFinal); err != nil {
				t.Fatal(err)
			}
			if err := final.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, view); err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "partial -> final", view.rows(), want)
		})
	}
}

// aggTestView applies a changelog to a multiset of rows, failing the test on a
// retraction of a row it does not hold.
type aggTestView struct {
	t    *testing.T
	have map[string]int
}

func (v *aggTestView) Collect(ctx context.Context, b exec.Batch) error {
	if v.have == nil {
		v.have = map[string]int{}
	}
	for i, r := range testkit.Rows(exec.Batch{Rec: b.Rec}) {
		switch b.Op(i) {
		case exec.Insert, exec.UpdateAfter:
			v.have[r]++
		default:
			if v.have[r] == 0 {
				v.t.Errorf("%s of %s, which is not in the result", b.Op(i), r)
			}
			v.have[r]--
		}
	}
	return nil
}

func (v *aggTestView) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }

func (v *aggTestView) rows() []string {
	out := []string{}
	for r, n := range v.have {
		for range n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
