package operators

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestHashAggDecimalSumNoNulls checks sum and avg of a decimal column without
// NULLs (numAcc's loop without validity tests) against big.Int sums of the
// unscaled values, for values near the int64 range, where an int64 sum would
// overflow.
func TestHashAggDecimalSumNoNulls(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(5, 6))
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "d", Type: types.DecimalType(38, 2)}}
	sums := map[int64]*big.Int{0: new(big.Int), 1: new(big.Int)}
	counts := map[int64]int64{}
	var js []string
	for range 3000 {
		k := r.Int64N(2)
		v := new(big.Int).SetInt64(r.Int64N(1 << 62))
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		sums[k].Add(sums[k], v)
		counts[k]++
		js = append(js, fmt.Sprintf(`{"k": %d, "d": "%s"}`, k, decText(v)))
	}
	b := exec.Batch{Rec: testkit.Record(t, mem, in, "["+strings.Join(js, ",")+"]")}
	defer b.Rec.Release()
	aggs := []AggSpec{{Func: "sum", Arg: 1, Type: types.DecimalType(38, 2)}, {Func: "avg", Arg: 1, Type: types.DecimalType(38, 2)}}
	out := types.Schema{in[0], {Name: "s", Type: types.DecimalType(38, 2)}, {Name: "a", Type: types.DecimalType(38, 2)}}
	got, err := testkit.Run(t, opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs}, out), mem, b)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k, s := range sums {
		// avg rounded half away from zero at scale 2, on the unscaled sum.
		q, m := new(big.Int).QuoRem(s, big.NewInt(counts[k]), new(big.Int))
		if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(big.NewInt(counts[k])) >= 0 {
			q.Add(q, big.NewInt(int64(s.Sign())))
		}
		want = append(want, fmt.Sprintf(`[%d,"%s","%s"]`, k, decText(s), decText(q)))
	}
	sort.Strings(want)
	testkit.Equal(t, "groups", got.Sorted(), want)
}

// decText formats an unscaled value of scale 2.
func decText(v *big.Int) string {
	a := new(big.Int).Abs(v).String()
	for len(a) < 3 {
		a = "0" + a
	}
	s := a[:len(a)-2] + "." + a[len(a)-2:]
	if v.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// TestHashAggDecimalSumPhases checks sum of a decimal(15,2) column, whose
// result at its own scale is the accumulator as it is (sumAgg.result's
// decimal loop), with NULLs, a group of NULLs only (sum NULL), negative
// values, in the complete phase and through a partial aggregate and a final
// one, against sums of the unscaled values kept by hand; and a sum at
// another scale (decimal(38,4)), which converts.
func TestHashAggDecimalSumPhases(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "d", Type: types.DecimalType(15, 2)}}
	rows := `[{"k": 1, "d": "1.25"}, {"k": 2, "d": null}, {"k": 1, "d": "-3.50"}, {"k": 3, "d": "0.01"},
		{"k": 2, "d": null}, {"k": 1, "d": null}, {"k": 3, "d": "999999999999.99"}, {"k": 4, "d": "-0.10"}]`
	// k=1: 125 - 350 = -225; k=2: NULLs only; k=3: 1 + 99999999999999 = 100000000000000; k=4: -10.
	want := []string{`[1,"-2.25"]`, `[2,null]`, `[3,"1000000000000.00"]`, `[4,"-0.10"]`}
	ctx := context.Background()
	for _, scale := range []int32{2, 4} {
		st := types.DecimalType(38, int(scale))
		aggs := []AggSpec{{Func: "sum", Arg: 1, Type: st}}
		out := types.Schema{in[0], {Name: "s", Type: st}}
		exp := want
		if scale == 4 {
			exp = []string{`[1,"-2.2500"]`, `[2,null]`, `[3,"1000000000000.0000"]`, `[4,"-0.1000"]`}
		}
		b := exec.Batch{Rec: testkit.Record(t, mem, in, rows)}
		got, err := testkit.Run(t, opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs}, out), mem, b)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Equal(t, fmt.Sprint("complete, scale ", scale), got.Sorted(), exp)

		p := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, PartialSchema(in[:1], aggs, in))
		if err := p.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		var mid []exec.Batch
		keep := testkit.Func(func(bt exec.Batch) error { bt.Rec.Retain(); mid = append(mid, bt); return nil })
		if err := p.ProcessBatch(ctx, 0, b, keep); err != nil {
			t.Fatal(err)
		}
		if err := p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep); err != nil {
			t.Fatal(err)
		}
		p.Close(ctx)
		b.Rec.Release()
		got, err = testkit.Run(t, opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggFinal}, out), mem, mid...)
		testkit.Release(mid)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Equal(t, fmt.Sprint("partial and final, scale ", scale), got.Sorted(), exp)
	}
}
