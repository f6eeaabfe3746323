package operators

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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

// spillIn is the input of the spill tests: a text key that is sometimes
// NULL, a bigint key, and a bigint value.
var spillIn = types.Schema{{Name: "k", Type: types.StringType}, {Name: "g", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type}}

// spillBatches makes rows random rows over about groups distinct (k, g)
// pairs, in batches of 1000, and the reference answer by map: for each group
// "k|g" its count(*), sum(v), max(v) and count(DISTINCT v).
func spillBatches(t *testing.T, mem memory.Allocator, rows, groups int) ([]exec.Batch, map[string][4]int64) {
	rng := rand.New(rand.NewPCG(7, 9))
	ref := map[string][4]int64{}
	distinct := map[string]map[int64]bool{}
	var batches []exec.Batch
	sch := spillIn.Arrow()
	for lo := 0; lo < rows; lo += 1000 {
		kb := array.NewStringBuilder(mem)
		gb := array.NewInt64Builder(mem)
		vb := array.NewInt64Builder(mem)
		for range min(1000, rows-lo) {
			id := rng.IntN(groups)
			k, g, v := fmt.Sprintf("key %d", id%(groups/3+1)), int64(id%3), int64(rng.IntN(50))
			name := k
			if id%97 == 0 {
				kb.AppendNull()
				name = "NULL"
			} else {
				kb.Append(k)
			}
			gb.Append(g)
			vb.Append(v)
			key := fmt.Sprintf("%s|%d", name, g)
			r := ref[key]
			r[0]++
			r[1] += v
			if r[0] == 1 || v > r[2] {
				r[2] = v
			}
			if distinct[key] == nil {
				distinct[key] = map[int64]bool{}
			}
			distinct[key][v] = true
			r[3] = int64(len(distinct[key]))
			ref[key] = r
		}
		cols := []arrow.Array{kb.NewArray(), gb.NewArray(), vb.NewArray()}
		kb.Release()
		gb.Release()
		vb.Release()
		rec := array.NewRecordBatch(sch, cols, int64(cols[0].Len()))
		for _, c := range cols {
			c.Release()
		}
		batches = append(batches, exec.Batch{Rec: rec})
	}
	return batches, ref
}

// spillRun runs a hash_agg of cfg over batches in one task context whose
// spill directory is dir, and returns its rows and whether it spilled.
func spillRun(t *testing.T, mem memory.Allocator, dir string, cfg HashAggConfig, out types.Schema, batches []exec.Batch) ([]string, bool) {
	t.Helper()
	op, err := newHashAgg(cfg, opTestSpec("hash_agg", cfg, out))
	if err != nil {
		t.Fatal(err)
	}
	tc := testkit.TaskContext(mem)
	tc.SpillDir = dir
	ctx := context.Background()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	c := &testkit.Collector{T: t}
	spilled := false
	for _, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			t.Fatal(err)
		}
		spilled = spilled || op.spill != nil
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	if err := op.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Signals); n != 1 || c.Signals[0].Kind != exec.EndOfStream {
		t.Errorf("signals %v, want one end of stream", c.Signals)
	}
	return c.Sorted(), spilled
}

// refRows formats the reference as spillRun's rows of GROUP BY k, g with
// count(*), sum(v), max(v) (and count(DISTINCT v) when distinct).
func refRows(ref map[string][4]int64, distinct bool) []string {
	var rows []string
	for key, r := range ref {
		k, g, _ := strings.Cut(key, "|")
		kj := fmt.Sprintf("%q", k)
		if k == "NULL" {
			kj = "null"
		}
		row := fmt.Sprintf("[%s,%s,%d,\"%d\",%d", kj, g, r[0], r[1], r[2])
		if distinct {
			row += fmt.Sprintf(",%d", r[3])
		}
		rows = append(rows, row+"]")
	}
	slices.Sort(rows)
	return rows
}

// TestHashAggSpills: a complete aggregation whose groups outgrow a tiny
// budget spills, partitions again where a partition is still too big, and
// answers as a map counts; it leaves no memory and no file behind.
func TestHashAggSpills(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	batches, ref := spillBatches(t, mem, 60000, 20000)
	defer testkit.Release(batches)
	out := types.Schema{spillIn[0], spillIn[1], {Name: "n", Type: types.Int64Type},
		{Name: "s", Type: types.DecimalType(38, 0)}, {Name: "m", Type: types.Int64Type}, {Name: "d", Type: types.Int64Type}}
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 2, Type: types.DecimalType(38, 0)},
		{Func: "max", Arg: 2, Type: types.Int64Type}, {Func: "count", Arg: 2, Distinct: true, Type: types.Int64Type}}
	want := refRows(ref, true)
	for _, limit := range []int64{0, 1 << 20, 256 << 10} {
		dir := t.TempDir()
		got, spilled := spillRun(t, mem, dir, HashAggConfig{GroupBy: []int{0, 1}, Aggs: aggs, Phase: AggComplete, MemoryLimit: limit}, out, batches)
		if spilled != (limit > 0) {
			t.Errorf("budget %d: spilled %v", limit, spilled)
		}
		testkit.Equal(t, fmt.Sprintf("budget %d", limit), got, want)
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Errorf("budget %d: the spill directory holds %v (%v)", limit, entries, err)
		}
	}
}

// TestHashAggSpillsTwoPhase: partial aggregates under a tiny budget send
// their groups early and start afresh; a final one under a tiny budget
// spills; the answer is still the map's. The keys are one text column, which
// the key table holds raw, NULL included.
func TestHashAggSpillsTwoPhase(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	batches, _ := spillBatches(t, mem, 50000, 30000)
	defer testkit.Release(batches)
	// The reference of GROUP BY k alone.
	ref := map[string][2]int64{}
	for _, b := range batches {
		k := b.Rec.Column(0).(*array.String)
		v := b.Rec.Column(2).(*array.Int64)
		for i := range k.Len() {
			name := k.Value(i)
			if k.IsNull(i) {
				name = "NULL"
			}
			r := ref[name]
			r[0]++
			r[1] += v.Value(i)
			ref[name] = r
		}
	}
	var want []string
	for k, r := range ref {
		kj := fmt.Sprintf("%q", k)
		if k == "NULL" {
			kj = "null"
		}
		want = append(want, fmt.Sprintf("[%s,%d,\"%d\"]", kj, r[0], r[1]))
	}
	slices.Sort(want)
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 2, Type: types.DecimalType(38, 0)}}
	keyCol := types.Schema{spillIn[0]}
	partialOut := PartialSchema(keyCol, aggs, spillIn)
	finalOut := append(append(types.Schema{}, keyCol...), types.Field{Name: "n", Type: types.Int64Type}, types.Field{Name: "s", Type: types.DecimalType(38, 0)})
	dir := t.TempDir()
	// Two partials, each over half the batches.
	var partials []exec.Batch
	emitted := 0
	for half := range 2 {
		op, err := newHashAgg(HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial, MemoryLimit: 128 << 10},
			opTestSpec("hash_agg", nil, partialOut))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		keep := testkit.Func(func(b exec.Batch) error {
			b.Rec.Retain()
			partials = append(partials, b)
			emitted += b.NumRows()
			return nil
		})
		for i, b := range batches {
			if i%2 == half {
				if err := op.ProcessBatch(ctx, 0, b, keep); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep); err != nil {
			t.Fatal(err)
		}
		op.Close(ctx)
	}
	defer testkit.Release(partials)
	if emitted <= len(ref) {
		t.Errorf("the partials emitted %d rows for %d groups: they never started afresh", emitted, len(ref))
	}
	got, spilled := spillRun(t, mem, dir, HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggFinal, MemoryLimit: 256 << 10}, finalOut, partials)
	if !spilled {
		t.Error("the final aggregate did not spill")
	}
	testkit.Equal(t, "two phases", got, want)
}
