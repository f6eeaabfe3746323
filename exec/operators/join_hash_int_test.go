package operators

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intColumn builds a column of type dt (BIGINT, INTEGER or DATE) of vals,
// NULL where null is true.
func intColumn(t *testing.T, mem memory.Allocator, dt arrow.DataType, vals []int64, null []bool) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i, v := range vals {
		switch {
		case null[i]:
			b.AppendNull()
		case dt.ID() == arrow.INT64:
			b.(*array.Int64Builder).Append(v)
		case dt.ID() == arrow.INT32:
			b.(*array.Int32Builder).Append(int32(v))
		default:
			b.(*array.Date32Builder).Append(arrow.Date32(v))
		}
	}
	return b.NewArray()
}

// TestIntIndex checks intIndex, dense and hashed, against a map of each key's
// build rows: every probe key's rows, in build order, NULLs matching nothing.
func TestIntIndex(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(7, 21))
	cases := []struct {
		name       string
		dt         arrow.DataType
		build      int
		keys       func() int64
		wantDense  bool
		wantBitmap bool
	}{
		{"dense int64", arrow.PrimitiveTypes.Int64, 5000, func() int64 { return rng.Int64N(3000) - 100 }, true, false},
		{"dense date", arrow.FixedWidthTypes.Date32, 3000, func() int64 { return 9000 + rng.Int64N(4000) }, true, false},
		{"sparse int64", arrow.PrimitiveTypes.Int64, 4000, func() int64 { return rng.Int64N(1<<40) - 1<<39 }, false, false},
		{"sparse duplicates", arrow.PrimitiveTypes.Int64, 4000, func() int64 { return rng.Int64N(50) << 30 }, false, false},
		{"extremes", arrow.PrimitiveTypes.Int64, 200, func() int64 {
			return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[rng.IntN(5)]
		}, false, false},
		{"sparse int32", arrow.PrimitiveTypes.Int32, 3000, func() int64 { return int64(rng.Int32()) - 1<<30 }, false, false},
		{"one key", arrow.PrimitiveTypes.Int64, 100, func() int64 { return 42 }, true, false},
		// 4000 keys over 160000 values: too sparse for an array, a bitmap of
		// 2500 words.
		{"bitmap int64", arrow.PrimitiveTypes.Int64, 4000, func() int64 { return 1000 + rng.Int64N(160000) }, false, true},
		{"bitmap date", arrow.FixedWidthTypes.Date32, 4000, func() int64 { return -80000 + rng.Int64N(160000) }, false, true},
		// 200 keys over 200000 values (TPC-H q17's parts): past a bitmap of 64
		// bits a key, within bitmapMin's; over 4 M values, past both.
		{"few keys bitmap", arrow.PrimitiveTypes.Int64, 200, func() int64 { return 1 + rng.Int64N(200000) }, false, true},
		{"few keys no bitmap", arrow.PrimitiveTypes.Int64, 200, func() int64 { return rng.Int64N(1 << 22) }, false, false},
		// 40000 keys over 4 M values (q5's orders of a year and a region over
		// their 6 M): past bitmapMin, a bitmap of 500 KiB, under the table's
		// 1.5 MiB.
		{"bitmap under the table", arrow.PrimitiveTypes.Int64, 40000, func() int64 { return rng.Int64N(4_000_000) }, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bv, bn := make([]int64, c.build), make([]bool, c.build)
			want := map[int64][]int32{}
			for r := range bv {
				bv[r], bn[r] = c.keys(), rng.IntN(10) == 0
				if !bn[r] {
					want[bv[r]] = append(want[bv[r]], int32(r))
				}
			}
			bcol := intColumn(t, mem, c.dt, bv, bn)
			defer bcol.Release()
			next := make([]int32, c.build)
			x := buildIntIndex([]arrow.Array{bcol}, next)
			if x.dense != c.wantDense || (x.present != nil) != c.wantBitmap {
				t.Fatalf("dense = %v, bitmap = %v, want %v, %v", x.dense, x.present != nil, c.wantDense, c.wantBitmap)
			}
			// Probe with every build key, NULLs, and keys the build side lacks.
			pv := append([]int64(nil), bv...)
			pn := append([]bool(nil), bn...)
			for range 2000 {
				pv, pn = append(pv, c.keys()+rng.Int64N(3)), append(pn, rng.IntN(10) == 0)
			}
			pv, pn = append(pv, math.MinInt64, math.MaxInt64), append(pn, false, false)
			if c.dt.ID() != arrow.INT64 {
				for i := range pv {
					pv[i] = int64(int32(pv[i]))
				}
			}
			pcol := intColumn(t, mem, c.dt, pv, pn)
			defer pcol.Release()
			first := make([]int32, len(pv))
			var packed []int64
			var null []bool
			x.lookup([]arrow.Array{pcol}, first, &packed, &null)
			for i := range pv {
				var got []int32
				for r := first[i]; r >= 0; r = next[r] {
					got = append(got, r)
				}
				w := want[pv[i]]
				if pn[i] {
					w = nil
				}
				if !slices.Equal(got, w) {
					t.Fatalf("probe row %d (key %d, null %v): rows %v, want %v", i, pv[i], pn[i], got, w)
				}
			}
		})
	}
}

// TestIntIndexAllNull: a build side of NULL keys only matches nothing.
func TestIntIndexAllNull(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	col := intColumn(t, mem, arrow.PrimitiveTypes.Int64, []int64{1, 2}, []bool{true, true})
	defer col.Release()
	next := make([]int32, 2)
	x := buildIntIndex([]arrow.Array{col}, next)
	probe := intColumn(t, mem, arrow.PrimitiveTypes.Int64, []int64{1, 0}, []bool{false, false})
	defer probe.Release()
	first := []int32{7, 7}
	x.lookup([]arrow.Array{probe}, first, nil, nil)
	if fmt.Sprint(first, next) != "[-1 -1] [-1 -1]" {
		t.Fatalf("first %v next %v", first, next)
	}
}

// TestIntIndexPacked checks an index of two and three key columns, packed
// into one value, against a map of each key's build rows: probe keys with a
// column outside the build side's range, or NULL, match nothing; columns
// whose ranges need more than 63 bits together are refused.
func TestIntIndexPacked(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		name  string
		dts   []arrow.DataType
		build int
		vals  []func() int64
	}{
		{"partsupp", []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64}, 4000,
			[]func() int64{func() int64 { return 1 + rng.Int64N(1000) }, func() int64 { return 1 + rng.Int64N(50) }}},
		{"negative and int32", []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Date32}, 3000,
			[]func() int64{func() int64 { return rng.Int64N(20) - 10 }, func() int64 { return rng.Int64N(1<<30) - 1<<29 }, func() int64 { return 9000 + rng.Int64N(7) }}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := func(vs []int64) string { return fmt.Sprint(vs) }
			gen := func(n int, spread int64) ([]arrow.Array, [][]int64, []bool) {
				vals := make([][]int64, len(c.dts))
				nullRow := make([]bool, n)
				var cols []arrow.Array
				for j, dt := range c.dts {
					vals[j] = make([]int64, n)
					null := make([]bool, n)
					for r := range n {
						vals[j][r] = c.vals[j]() + rng.Int64N(2*spread+1) - spread
						if dt.ID() != arrow.INT64 {
							vals[j][r] = int64(int32(vals[j][r]))
						}
						null[r] = rng.IntN(25) == 0
						nullRow[r] = nullRow[r] || null[r]
					}
					cols = append(cols, intColumn(t, mem, dt, vals[j], null))
				}
				return cols, vals, nullRow
			}
			rowKey := func(vals [][]int64, r int) string {
				vs := make([]int64, len(vals))
				for j := range vals {
					vs[j] = vals[j][r]
				}
				return key(vs)
			}
			bcols, bvals, bnull := gen(c.build, 0)
			defer func() {
				for _, a := range bcols {
					a.Release()
				}
			}()
			want := map[string][]int32{}
			for r := range c.build {
				if !bnull[r] {
					k := rowKey(bvals, r)
					want[k] = append(want[k], int32(r))
				}
			}
			next := make([]int32, c.build)
			x := buildIntIndex(bcols, next)
			if x == nil || !x.packed {
				t.Fatalf("not packed: %+v", x)
			}
			var packed []int64
			var null []bool
			for _, spread := range []int64{0, 100} { // the build keys' values, then past their ranges
				pcols, pvals, pnull := gen(5000, spread)
				first := make([]int32, 5000)
				x.lookup(pcols, first, &packed, &null)
				for i := range first {
					var got []int32
					for r := first[i]; r >= 0; r = next[r] {
						got = append(got, r)
					}
					w := want[rowKey(pvals, i)]
					if pnull[i] {
						w = nil
					}
					if !slices.Equal(got, w) {
						t.Fatalf("probe row %d (%s, null %v): rows %v, want %v", i, rowKey(pvals, i), pnull[i], got, w)
					}
				}
				for _, a := range pcols {
					a.Release()
				}
			}
		})
	}
	// Two columns of 40 bits each: no packing.
	wide := []arrow.Array{
		intColumn(t, mem, arrow.PrimitiveTypes.Int64, []int64{0, 1 << 40}, []bool{false, false}),
		intColumn(t, mem, arrow.PrimitiveTypes.Int64, []int64{1 << 40, 0}, []bool{false, false}),
	}
	if x := buildIntIndex(wide, make([]int32, 2)); x != nil {
		t.Errorf("80 bits of ranges packed: %+v", x)
	}
	for _, a := range wide {
		a.Release()
	}
}

// BenchmarkIntIndexLookup looks up 8192 keys of 1..200000, as lineitem's
// parts, in indexes of 200 to 60000 of them (TPC-H q17's, q8's and q20's
// parts, and more): ns/probe is one lookup's time.
func BenchmarkIntIndexLookup(b *testing.B) {
	for _, n := range []int{200, 1300, 5000, 60000} {
		rng := rand.New(rand.NewPCG(1, 2))
		bb, pb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		for range n {
			bb.Append(1 + rng.Int64N(200000))
		}
		for range 8192 {
			pb.Append(1 + rng.Int64N(200000))
		}
		build, probe := bb.NewArray(), pb.NewArray()
		x := buildIntIndex([]arrow.Array{build}, make([]int32, n))
		first := make([]int32, probe.Len())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				x.lookup([]arrow.Array{probe}, first, nil, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(first)), "ns/probe")
		})
	}
}
