package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// orderKeyBatches returns rows (k bigint, x bigint) shaped as one task's share
// of TPC-H SF1 lineitem in q18's GROUP BY l_orderkey: keys ascending, 1 to 7
// rows each (4 on average), the first 8 of every 32 values used, as
// cmd/tpchgen's order keys are; nkeys keys in all.
func orderKeyBatches(mem memory.Allocator, nkeys int) ([]exec.Batch, int) {
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "x", Type: types.Int64Type}}
	var batches []exec.Batch
	kb, xb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	defer kb.Release()
	defer xb.Release()
	rows := 0
	flush := func() {
		k, x := kb.NewArray(), xb.NewArray()
		batches = append(batches, exec.Batch{Rec: array.NewRecordBatch(in.Arrow(), []arrow.Array{k, x}, int64(k.Len()))})
		k.Release()
		x.Release()
	}
	for i := range nkeys {
		key := int64(i/8*32 + i%8 + 1)
		for j := range 1 + (i*7919)%7 {
			kb.Append(key)
			xb.Append(int64(j))
			rows++
			if kb.Len() == vector.OutBatchRows {
				flush()
			}
		}
	}
	if kb.Len() > 0 {
		flush()
	}
	return batches, rows
}

// BenchmarkHashAggOrderKeys is one task's aggregation in own-table TPC-H
// SF1 q18 at parallelism 2 (GROUP BY l_orderkey, sum): a partial aggregate
// over 3M rows of 750k ascending keys, then a final one over its output. It
// reports the milliseconds of each per run (partial-ms includes its emit).
func BenchmarkHashAggOrderKeys(b *testing.B) {
	mem := vector.NewPoolAllocator()
	const nkeys = 750_000
	in, _ := orderKeyBatches(mem, nkeys)
	defer testkit.Release(in)
	schema := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "x", Type: types.Int64Type}}
	aggs := []AggSpec{{Func: "sum", Arg: 1, Type: types.Int64Type}}
	partialOut := PartialSchema(schema[:1], aggs, schema)
	finalOut := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "s", Type: types.Int64Type}}
	ctx := context.Background()
	var partial, final time.Duration
	for b.Loop() {
		t := time.Now()
		p := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, partialOut)
		if err := p.Open(ctx, testkit.TaskContext(mem)); err != nil {
			b.Fatal(err)
		}
		var mid []exec.Batch
		keep := testkit.Func(func(bt exec.Batch) error { bt.Rec.Retain(); mid = append(mid, bt); return nil })
		for _, bt := range in {
			if err := p.ProcessBatch(ctx, 0, bt, keep); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep); err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
		partial += time.Since(t)
		t = time.Now()
		f := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggFinal}, finalOut)
		if err := f.Open(ctx, testkit.TaskContext(mem)); err != nil {
			b.Fatal(err)
		}
		for _, bt := range mid {
			if err := f.ProcessBatch(ctx, 0, bt, nil); err != nil {
				b.Fatal(err)
			}
		}
		groups := 0
		sink := testkit.Func(func(bt exec.Batch) error { groups += bt.NumRows(); return nil })
		if err := f.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, sink); err != nil {
			b.Fatal(err)
		}
		f.Close(ctx)
		final += time.Since(t)
		testkit.Release(mid)
		if groups != nkeys {
			b.Fatalf("%d groups, want %d", groups, nkeys)
		}
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(per(partial), "partial-ms")
	b.ReportMetric(per(final), "final-ms")
}

// TestHashAggPartialRestarts checks that a partial aggregate whose groups
// outgrow partialGroups sends them on before end of stream when its rows
// cluster by group, and keeps them when they do not: shuffled, or three rows
// a group on average with most of them of a few hot keys all through the
// input (as a text's words are), and that a final
// aggregate over its output gets every group's sum and count, as a map of
// the input says, for an integer key (the integer table) and a text key, in
// batches of partialSlice rows and in larger ones, which a clustered partial
// folds in slices.
func TestHashAggPartialRestarts(t *testing.T) {
	const groups = partialGroups + 30_000
	for _, batchRows := range []int{partialSlice, 2*partialSlice + 1000} {
		for _, keyType := range []types.Type{types.Int64Type, types.StringType} {
			for _, mode := range []string{"clustered", "shuffled", "hot keys"} {
				clustered := mode == "clustered"
				t.Run(fmt.Sprintf("%s %s batch=%d", keyType.ID, mode, batchRows), func(t *testing.T) {
					mem := testkit.Mem()
					defer mem.AssertSize(t, 0)
					r := rand.New(rand.NewPCG(7, 8))
					// Clustered: each group's 1 to 4 rows are adjacent; else one
					// or two rows a group (1.5 on average), shuffled.
					type row struct{ k, x int64 }
					var rows []row
					for g := range int64(groups) {
						n := 1 + r.IntN(4)
						if !clustered {
							n = 1 + r.IntN(2)
						}
						for range n {
							rows = append(rows, row{g * 7, r.Int64N(1000)})
						}
						if mode == "hot keys" {
							rows = append(rows, row{g % 100 * 7, 1}, row{g % 97 * 7, 2})
						}
					}
					if !clustered {
						r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
					}
					type state struct{ sum, count int64 }
					want := map[int64]*state{}
					for _, rw := range rows {
						if want[rw.k] == nil {
							want[rw.k] = &state{}
						}
						want[rw.k].sum += rw.x
						want[rw.k].count++
					}
					key := func(k int64) any {
						if keyType.ID == types.String {
							return fmt.Sprint("key ", k)
						}
						return k
					}
					in := types.Schema{{Name: "k", Type: keyType}, {Name: "x", Type: types.Int64Type}}
					var batches []exec.Batch
					for lo := 0; lo < len(rows); lo += batchRows {
						var js []string
						for _, rw := range rows[lo:min(lo+batchRows, len(rows))] {
							b, _ := json.Marshal(map[string]any{"k": key(rw.k), "x": rw.x})
							js = append(js, string(b))
						}
						batches = append(batches, exec.Batch{Rec: testkit.Record(t, mem, in, "["+strings.Join(js, ",")+"]")})
					}
					defer testkit.Release(batches)

					aggs := []AggSpec{{Func: "sum", Arg: 1, Type: types.Int64Type}, {Func: "count", Arg: -1, Type: types.Int64Type}}
					ctx := context.Background()
					p := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, PartialSchema(in[:1], aggs, in))
					if err := p.Open(ctx, testkit.TaskContext(mem)); err != nil {
						t.Fatal(err)
					}
					var mid []exec.Batch
					keep := testkit.Func(func(b exec.Batch) error { b.Rec.Retain(); mid = append(mid, b); return nil })
					for _, b := range batches {
						if err := p.ProcessBatch(ctx, 0, b, keep); err != nil {
							t.Fatal(err)
						}
					}
					early := len(mid)
					if err := p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep); err != nil {
						t.Fatal(err)
					}
					p.Close(ctx)
					defer testkit.Release(mid)
					if clustered && early == 0 {
						t.Error("clustered rows: the partial aggregate sent nothing before end of stream")
					}
					if !clustered && early != 0 {
						t.Errorf("unclustered rows: the partial aggregate sent %d batches before end of stream", early)
					}

					out := types.Schema{in[0], {Name: "s", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}}
					f := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggFinal}, out)
					got, err := testkit.Run(t, f, mem, mid...)
					if err != nil {
						t.Fatal(err)
					}
					var wantRows []string
					for k, s := range want {
						b, _ := json.Marshal([]any{key(k), s.sum, s.count})
						wantRows = append(wantRows, string(b))
					}
					sort.Strings(wantRows)
					testkit.Equal(t, "groups", got.Sorted(), wantRows)
				})
			}
		}
	}
}
