package operators

import (
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
