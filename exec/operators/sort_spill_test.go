package operators

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// sortRun runs a sort of cfg over batches in a task context whose spill
// directory is dir, and returns its rows and how many runs it spilled.
func sortRun(t *testing.T, mem memory.Allocator, dir string, cfg SortConfig, in types.Schema, batches []exec.Batch) ([]string, int) {
	t.Helper()
	op := opTestNew(t, "sort", cfg, in).(*sortOp)
	tc := testkit.TaskContext(mem)
	tc.SpillDir = dir
	ctx := context.Background()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	c := &testkit.Collector{T: t}
	for _, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			t.Fatal(err)
		}
	}
	runs := 0
	if op.spill != nil {
		runs = len(op.spill.runs)
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
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spill directory holds %d entries after Close", len(left))
	}
	return c.Rows, runs
}

// TestSortSpilledCases runs the hand-checked cases with a budget so small
// that every input batch becomes a run of its own, merged at the end.
func TestSortSpilledCases(t *testing.T) {
	for _, tc := range sortCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, sortSchema, sortInput...)
			defer testkit.Release(bs)
			cfg := tc.cfg
			cfg.MemoryLimit = 1
			rows, runs := sortRun(t, mem, t.TempDir(), cfg, sortSchema, bs)
			if runs != len(bs) {
				t.Errorf("%d runs, want one per batch (%d)", runs, len(bs))
			}
			var ids []string
			for _, r := range rows {
				var id int
				fmt.Sscanf(r[len(r)-3:], ",%d]", &id)
				ids = append(ids, fmt.Sprint(id))
			}
			var want []string
			for _, id := range tc.want {
				want = append(want, fmt.Sprint(id))
			}
			testkit.Equal(t, "ids", ids, want)
		})
	}
}

// TestSortSpilledRandom sorts random rows, some of them deletes, through many
// runs and checks them against the same sort in memory (which
// TestSort checks by hand), with and without OFFSET and LIMIT.
func TestSortSpilledRandom(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	in := types.Schema{{Name: "s", Type: types.StringType}, {Name: "n", Type: types.Int64Type}, {Name: "id", Type: types.Int64Type}}
	r := rand.New(rand.NewPCG(1, 2))
	var bs []exec.Batch
	id := 0
	for range 40 {
		sb, nb, ib := array.NewStringBuilder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		var ops []exec.ChangeKind
		for range 500 {
			if r.IntN(10) == 0 {
				sb.AppendNull()
			} else {
				sb.Append(strings.Repeat("ab\x00"[r.IntN(3):], r.IntN(3)) + fmt.Sprint(r.IntN(20)))
			}
			if r.IntN(8) == 0 {
				nb.AppendNull()
			} else {
				nb.Append(r.Int64N(200) - 100)
			}
			ib.Append(int64(id))
			id++
			op := exec.Insert
			if r.IntN(5) == 0 {
				op = exec.Delete
			}
			ops = append(ops, op)
		}
		cols := []arrow.Array{sb.NewArray(), nb.NewArray(), ib.NewArray()}
		bs = append(bs, exec.Batch{Rec: array.NewRecordBatch(in.Arrow(), cols, 500), Ops: ops})
		vector.ReleaseArrays(cols)
		sb.Release()
		nb.Release()
		ib.Release()
	}
	defer testkit.Release(bs)
	keys := []SortKeySpec{{Col: 0}, {Col: 1, Desc: true, NullsFirst: true}}
	for _, lim := range []struct{ off, n int64 }{{0, -1}, {1234, -1}, {100, 5000}, {0, 3}} {
		t.Run(fmt.Sprintf("offset %d limit %d", lim.off, lim.n), func(t *testing.T) {
			cfg := SortConfig{Keys: keys, Offset: lim.off, Limit: lim.n}
			want, runs := sortRun(t, mem, t.TempDir(), cfg, in, bs)
			if runs != 0 {
				t.Fatalf("the in-memory sort spilled %d runs", runs)
			}
			cfg.MemoryLimit = 40 << 10
			got, runs := sortRun(t, mem, t.TempDir(), cfg, in, bs)
			if runs < 5 {
				t.Errorf("%d runs; the budget should have made many", runs)
			}
			testkit.Equal(t, "rows", got, want)
		})
	}
}

// TestSortTopNHoldsLittle feeds a LIMIT 5 sort many batches and checks that
// it never holds more than its compaction threshold and a batch, and returns
// the five smallest values.
func TestSortTopNHoldsLittle(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	s := types.Schema{{Name: "a", Type: types.Int64Type}}
	op := opTestNew(t, "sort", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Limit: 5}, s).(*sortOp)
	ctx := context.Background()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	c := &testkit.Collector{T: t}
	const batches, rows = 40, 1 << 14
	const n = batches * rows
	for k := range batches {
		b := array.NewInt64Builder(mem)
		for i := range rows {
			b.Append(int64(((k*rows + i) * 7919) % n)) // a permutation of 0..n-1
		}
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(s.Arrow(), []arrow.Array{col}, rows)
		col.Release()
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if op.rows >= topNCompactRows+rows {
			t.Fatalf("after batch %d the sort holds %d rows", k, op.rows)
		}
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{"[0]", "[1]", "[2]", "[3]", "[4]"})
}

// TestSortKeysOrder checks that normalised keys order rows as the
// comparators do, over values chosen for their edges: NULLs, NaN, -0, the
// extremes of int64, text with zero bytes and prefixes of each other.
func TestSortKeysOrder(t *testing.T) {
	mem := memory.NewGoAllocator()
	ib := array.NewInt64Builder(mem)
	for _, v := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 42} {
		ib.Append(v)
	}
	ib.AppendNull()
	fb := array.NewFloat64Builder(mem)
	for _, v := range []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), -1.5} {
		fb.Append(v)
	}
	fb.AppendNull()
	sb := array.NewStringBuilder(mem)
	for _, v := range []string{"", "a", "a\x00", "a\x00b", "a\x01", "ab", "\xff"} {
		sb.Append(v)
	}
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	db := array.NewDecimal128Builder(mem, dt)
	for _, v := range []int64{0, -1, 1, -1 << 62, 1 << 62, 7} {
		db.Append(decimal128.FromI64(v))
	}
	db.AppendNull()
	bb := array.NewBooleanBuilder(mem)
	for _, v := range []bool{true, false, true, false, true, false} {
		bb.Append(v)
	}
	bb.AppendNull()
	cols := []arrow.Array{ib.NewArray(), fb.NewArray(), sb.NewArray(), db.NewArray(), bb.NewArray(), array.NewNull(7)}
	fields := []arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "d", Type: dt, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, {Name: "z", Type: arrow.Null, Nullable: true}}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 7)
	defer rec.Release()
	sign := func(x int) int {
		switch {
		case x < 0:
			return -1
		case x > 0:
			return 1
		}
		return 0
	}
	for col := range cols {
		for _, spec := range []SortKeySpec{{Col: col}, {Col: col, Desc: true}, {Col: col, NullsFirst: true}, {Col: col, Desc: true, NullsFirst: true}} {
			cmpf, err := sortComparator(rec.Column(col), spec)
			if err != nil {
				t.Fatal(err)
			}
			var k sortKeys
			if err := k.encode(rec, []SortKeySpec{spec, {Col: 0}}); err != nil {
				t.Fatal(err)
			}
			for i := range 7 {
				for j := range 7 {
					want := sign(cmpf(int32(i), int32(j)))
					if want == 0 { // the second key decides
						c0, _ := sortComparator(rec.Column(0), SortKeySpec{Col: 0})
						want = sign(c0(int32(i), int32(j)))
					}
					if got := sign(bytes.Compare(k.key(i), k.key(j))); got != want {
						t.Errorf("%s %+v: rows %d and %d compare %d by key, %d by value", fields[col].Name, spec, i, j, got, want)
					}
				}
			}
		}
	}
}
