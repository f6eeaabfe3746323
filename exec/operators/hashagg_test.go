package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/task"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var aggTestIn = types.Schema{
	{Name: "k", Type: types.StringType},
	{Name: "g", Type: types.Int64Type},
	{Name: "x", Type: types.Int64Type},
	{Name: "f", Type: types.Float64Type},
	{Name: "d", Type: types.DecimalType(10, 2)},
	{Name: "s", Type: types.StringType},
}

// aggTestOut names output columns after their types.
func aggTestOut(ts ...types.Type) types.Schema { return testkit.Fields(ts...) }

var (
	aggTestDec0 = types.DecimalType(38, 0)
	aggTestDec2 = types.DecimalType(38, 2)
)

func TestHashAgg(t *testing.T) {
	const allAggRows = `[
		{"k": "a", "x": 1, "f": 1.5, "d": "1.00", "s": "pear"},
		{"k": "b", "x": null, "f": null, "d": null, "s": null},
		{"k": "a", "x": 2, "f": 2.5, "d": "2.00", "s": "apple"},
		{"k": null, "x": 5, "f": 0.5, "d": "-1.25", "s": "zoo"},
		{"k": "a", "x": null, "f": null, "d": "2.00", "s": "fig"},
		{"k": null, "x": 7, "f": null, "d": "-1.20", "s": null},
		{"k": "", "x": 2, "f": -1, "d": null, "s": ""}
	]`
	allAggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 2, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "min", Arg: 2, Type: types.Int64Type},
		{Func: "max", Arg: 2, Type: types.Int64Type},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
		{Func: "sum", Arg: 3, Type: types.Float64Type},
		{Func: "min", Arg: 5, Type: types.StringType},
		{Func: "max", Arg: 5, Type: types.StringType},
		{Func: "avg", Arg: 4, Type: aggTestDec2},
		{Func: "count", Arg: 5, Distinct: true, Type: types.Int64Type},
	}
	allAggOut := aggTestOut(types.StringType, types.Int64Type, types.Int64Type, aggTestDec0, types.Int64Type,
		types.Int64Type, types.Float64Type, types.Float64Type, types.StringType, types.StringType, aggTestDec2, types.Int64Type)

	tests := []struct {
		name    string
		cfg     HashAggConfig
		out     types.Schema
		batches []string
		want    []string // in order of first appearance of the group
	}{{
		name:    "every aggregate, text key with NULL and empty groups",
		cfg:     HashAggConfig{GroupBy: []int{0}, Aggs: allAggs},
		out:     allAggOut,
		batches: []string{allAggRows},
		want: []string{
			`["a",3,2,"3",1,2,1.5,4,"apple","pear","1.67",3]`,
			`["b",1,0,null,null,null,null,null,null,null,null,0]`,
			// avg(-1.25, -1.20) = -1.225, rounded half away from zero.
			`[null,2,2,"12",5,7,6,0.5,"zoo","zoo","-1.23",1]`,
			`["",1,1,"2",2,2,2,-1,"","",null,1]`,
		},
	}, {
		name:    "same rows split over batches",
		cfg:     HashAggConfig{GroupBy: []int{0}, Aggs: allAggs},
		out:     allAggOut,
		batches: opTestSplitRows(allAggRows, 3),
		want: []string{
			`["a",3,2,"3",1,2,1.5,4,"apple","pear","1.67",3]`,
			`["b",1,0,null,null,null,null,null,null,null,null,0]`,
			`[null,2,2,"12",5,7,6,0.5,"zoo","zoo","-1.23",1]`,
			`["",1,1,"2",2,2,2,-1,"","",null,1]`,
		},
	}, {
		name: "two keys with NULLs",
		cfg: HashAggConfig{GroupBy: []int{0, 1}, Aggs: []AggSpec{
			{Func: "count", Arg: -1, Type: types.Int64Type},
			{Func: "sum", Arg: 2, Type: types.Int64Type},
		}},
		out: aggTestOut(types.StringType, types.Int64Type, types.Int64Type, types.Int64Type),
		batches: []string{`[
			{"k": "a", "g": 1, "x": 10}, {"k": "a", "g": null, "x": 1}, {"k": "a", "g": 1, "x": 5},
			{"k": null, "g": 1, "x": 2}, {"k": null, "g": null, "x": 3}, {"k": null, "g": null, "x": 4},
			{"k": "a", "g": null, "x": null}]`},
		want: []string{`["a",1,2,15]`, `["a",null,2,1]`, `[null,1,1,2]`, `[null,null,2,7]`},
	}, {
		name: "key reordered: group by g, k",
		cfg: HashAggConfig{GroupBy: []int{1, 0}, Aggs: []AggSpec{
			{Func: "count", Arg: -1, Type: types.Int64Type},
		}},
		out:     aggTestOut(types.Int64Type, types.StringType, types.Int64Type),
		batches: []string{`[{"k": "a", "g": 1}, {"k": "a", "g": 2}, {"k": "a", "g": 1}]`},
		want:    []string{`[1,"a",2]`, `[2,"a",1]`},
	}, {
		name: "bigint sum overflows into decimal",
		cfg: HashAggConfig{GroupBy: []int{0}, Aggs: []AggSpec{
			{Func: "sum", Arg: 2, Type: aggTestDec0},
			{Func: "avg", Arg: 2, Type: aggTestDec2},
		}},
		out: aggTestOut(types.StringType, aggTestDec0, aggTestDec2),
		batches: []string{
			`[{"k": "p", "x": 9223372036854775807}, {"k": "n", "x": -9223372036854775808}]`,
			`[{"k": "p", "x": 9223372036854775807}, {"k": "n", "x": -1}, {"k": "p", "x": -5}]`,
		},
		want: []string{
			`["p","18446744073709551609","6148914691236517203.00"]`,
			`["n","-9223372036854775809","-4611686018427387904.50"]`,
		},
	}, {
		name: "avg rounding and integer avg to decimal",
		cfg: HashAggConfig{GroupBy: []int{0}, Aggs: []AggSpec{
			{Func: "avg", Arg: 2, Type: types.DecimalType(38, 0)},
			{Func: "avg", Arg: 2, Type: types.DecimalType(38, 3)},
		}},
		out: aggTestOut(types.StringType, aggTestDec0, types.DecimalType(38, 3)),
		batches: []string{`[{"k": "a", "x": 1}, {"k": "a", "x": 2}, {"k": "b", "x": -1}, {"k": "b", "x": -2},
			{"k": "c", "x": 1}, {"k": "c", "x": 1}, {"k": "c", "x": 0}]`},
		// 1.5 -> 2, -1.5 -> -2, 2/3 -> 1 and 0.667.
		want: []string{`["a","2","1.500"]`, `["b","-2","-1.500"]`, `["c","1","0.667"]`},
	}, {
		name: "decimal, timestamp, boolean and double keys; -0 groups with 0",
		cfg: HashAggConfig{GroupBy: []int{0, 1, 2, 3}, Aggs: []AggSpec{
			{Func: "count", Arg: -1, Type: types.Int64Type},
		}},
		out: aggTestOut(types.DecimalType(10, 2), types.TimestampType, types.BoolType, types.Float64Type, types.Int64Type),
		batches: []string{`[
			{"d": "1.50", "t": "2024-01-02 03:04:05", "b": true, "f": 0.0},
			{"d": "1.50", "t": "2024-01-02 03:04:05", "b": true, "f": -0.0},
			{"d": null, "t": null, "b": null, "f": null},
			{"d": "1.50", "t": "2024-01-02 03:04:05", "b": false, "f": 0.0},
			{"d": null, "t": null, "b": null, "f": null}]`},
		want: []string{
			`["1.50","2024-01-02T03:04:05",true,0,2]`,
			`[null,null,null,null,2]`,
			`["1.50","2024-01-02T03:04:05",false,0,1]`,
		},
	}, {
		name: "min and max of every type",
		cfg: HashAggConfig{Aggs: []AggSpec{
			{Func: "min", Arg: 0, Type: types.DecimalType(10, 2)},
			{Func: "max", Arg: 0, Type: types.DecimalType(10, 2)},
			{Func: "min", Arg: 1, Type: types.TimestampType},
			{Func: "max", Arg: 1, Type: types.TimestampType},
			{Func: "min", Arg: 2, Type: types.BoolType},
			{Func: "max", Arg: 2, Type: types.BoolType},
			{Func: "min", Arg: 3, Type: types.Float64Type},
			{Func: "max", Arg: 3, Type: types.Float64Type},
		}},
		out: aggTestOut(types.DecimalType(10, 2), types.DecimalType(10, 2), types.TimestampType, types.TimestampType,
			types.BoolType, types.BoolType, types.Float64Type, types.Float64Type),
		batches: []string{`[
			{"d": "1.50", "t": "2024-01-02 03:04:05", "b": true, "f": 2.5},
			{"d": "-3.25", "t": "1999-12-31 23:59:59", "b": false, "f": -7},
			{"d": null, "t": null, "b": null, "f": null},
			{"d": "10.00", "t": "2030-06-01 00:00:00", "b": true, "f": 1e10}]`},
		want: []string{`["-3.25","10.00","1999-12-31T23:59:59","2030-06-01T00:00:00",false,true,-7,10000000000]`},
	}}
	// The decimal/timestamp/bool/double schema of the last two cases.
	mixed := types.Schema{
		{Name: "d", Type: types.DecimalType(10, 2)}, {Name: "t", Type: types.TimestampType},
		{Name: "b", Type: types.BoolType}, {Name: "f", Type: types.Float64Type},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			in := aggTestIn
			if strings.Contains(tc.batches[0], `"t"`) {
				in = mixed
			}
			bs := testkit.Batches(t, mem, in, tc.batches...)
			defer testkit.Release(bs)
			op := opTestNew(t, "hash_agg", tc.cfg, tc.out)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "rows", c.Rows, tc.want)
			if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
				t.Errorf("signals %v, want one end of stream", c.Signals)
			}
		})
	}
}

// opTestSplitRows splits a JSON array of flat row objects into batches of n rows.
func opTestSplitRows(rows string, n int) []string {
	body := strings.TrimSpace(rows)
	body = strings.TrimSuffix(strings.TrimPrefix(body, "["), "]")
	var objs []string
	for _, part := range strings.Split(body, "}") {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), ","))
		if part != "" {
			objs = append(objs, part+"}")
		}
	}
	var out []string
	for i := 0; i < len(objs); i += n {
		out = append(out, "["+strings.Join(objs[i:min(i+n, len(objs))], ",")+"]")
	}
	return out
}

func TestHashAggNoGroupBy(t *testing.T) {
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 2, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "min", Arg: 5, Type: types.StringType},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
	}
	complete := aggTestOut(types.Int64Type, types.Int64Type, aggTestDec0, types.StringType, types.Float64Type)
	partialOut := PartialSchema(nil, aggs, aggTestIn)
	tests := []struct {
		name    string
		phase   AggPhase
		out     types.Schema
		batches []string
		schema  types.Schema
		want    []string
	}{
		{"complete, no input", AggComplete, complete, nil, aggTestIn, []string{`[0,0,null,null,null]`}},
		{"complete, empty batch", AggComplete, complete, []string{`[]`}, aggTestIn, []string{`[0,0,null,null,null]`}},
		{"complete, NULLs only", AggComplete, complete, []string{`[{"x": null}, {"x": null}]`}, aggTestIn,
			[]string{`[2,0,null,null,null]`}},
		{"complete", AggComplete, complete, []string{`[{"x": 4, "s": "b"}, {"x": 1, "s": "a"}]`, `[{"x": null, "s": "c"}]`},
			aggTestIn, []string{`[3,2,"5","a",2.5]`}},
		{"partial, no input", AggPartial, partialOut, nil, aggTestIn, nil},
		{"partial", AggPartial, partialOut, []string{`[{"x": 4, "s": "b"}, {"x": null}]`}, aggTestIn,
			[]string{`[2,1,"4","b","4",1]`}},
		{"final, no input", AggFinal, complete, nil, partialOut, []string{`[0,0,null,null,null]`}},
		{"final", AggFinal, complete, []string{
			`[{"count_0": 2, "count_1": 1, "sum_2": "4", "min_3": "b", "avg_4_sum": 4, "avg_4_count": 1}]`,
			`[{"count_0": 3, "count_1": 0, "sum_2": null, "min_3": null, "avg_4_sum": null, "avg_4_count": 0}]`,
			`[{"count_0": 1, "count_1": 1, "sum_2": "-1", "min_3": "a", "avg_4_sum": -1, "avg_4_count": 1}]`,
		}, partialOut, []string{`[6,2,"3","a",1.5]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, tc.schema, tc.batches...)
			defer testkit.Release(bs)
			op := opTestNew(t, "hash_agg", HashAggConfig{Aggs: aggs, Phase: tc.phase}, tc.out)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "rows", c.Rows, tc.want)
			if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
				t.Errorf("signals %v, want one end of stream", c.Signals)
			}
		})
	}
}

func TestHashAggPartialStates(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "avg", Arg: 2, Type: aggTestDec2},
		{Func: "avg", Arg: 4, Type: aggTestDec2},
		{Func: "max", Arg: 5, Type: types.StringType},
	}
	out := PartialSchema(types.Schema{aggTestIn[0]}, aggs, aggTestIn)
	bs := testkit.Batches(t, mem, aggTestIn, `[
		{"k": "a", "x": 1, "d": "1.25", "s": "p"}, {"k": "a", "x": null, "d": null, "s": "q"},
		{"k": "b", "x": null, "d": null, "s": null}, {"k": "a", "x": 2, "d": "0.50", "s": null}]`)
	defer testkit.Release(bs)
	op := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, out)
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	// avg of a bigint: double sum and count; of a decimal(10,2): decimal(38,2) sum.
	testkit.Equal(t, "rows", c.Rows, []string{
		`["a",3,"3","3",2,"1.75",2,"q"]`,
		`["b",1,null,null,0,null,0,null]`,
	})
}

func TestHashAggRetractions(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 2, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
		{Func: "count", Arg: 2, Distinct: true, Type: types.Int64Type},
	}
	out := aggTestOut(types.StringType, types.Int64Type, types.Int64Type, aggTestDec0, types.Float64Type, types.Int64Type)
	rec := testkit.Record(t, mem, aggTestIn, `[
		{"k": "a", "x": 1}, {"k": "a", "x": 2}, {"k": "a", "x": 1},
		{"k": "b", "x": 5}, {"k": "b", "x": 5}, {"k": "b", "x": 6},
		{"k": "c", "x": 3}, {"k": "c", "x": 3}]`)
	defer rec.Release()
	b := exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.Insert, exec.Delete, exec.Insert, exec.UpdateBefore, exec.UpdateAfter, exec.Insert, exec.Delete}}
	op := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs}, out)
	c, err := testkit.Run(t, op, mem, b)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{
		`["a",1,1,"2",2,1]`,
		`["b",1,1,"6",6,1]`,
		`["c",0,0,null,null,0]`,
	})

	// min/max cannot retract.
	op = opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: []AggSpec{{Func: "min", Arg: 2, Type: types.Int64Type}}},
		aggTestOut(types.StringType, types.Int64Type))
	if _, err := testkit.Run(t, op, mem, b); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("min over deletes: err = %v, want not supported", err)
	}
}

func TestHashAggErrors(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	// Construction errors.
	bad := []struct {
		cfg HashAggConfig
		out types.Schema
	}{
		{HashAggConfig{Aggs: []AggSpec{{Func: "median", Arg: 0}}}, aggTestOut(types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "count", Arg: 0, Distinct: true}}, Phase: AggPartial}, aggTestOut(types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "count", Arg: -1}}, Phase: "middle"}, aggTestOut(types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "count", Arg: -1}}}, aggTestOut(types.Int64Type, types.Int64Type)},
	}
	for _, b := range bad {
		if _, err := builtins().NewOperator(opTestSpec("hash_agg", b.cfg, b.out)); err == nil {
			t.Errorf("config %+v accepted", b.cfg)
		}
	}
	// Runtime errors: a column out of range, a bigint overflow, a wrong output type.
	bs := testkit.Batches(t, mem, aggTestIn, `[{"k": "a", "x": 9223372036854775807}, {"k": "a", "x": 1}]`)
	defer testkit.Release(bs)
	runBad := []struct {
		cfg HashAggConfig
		out types.Schema
	}{
		{HashAggConfig{GroupBy: []int{9}, Aggs: []AggSpec{{Func: "count", Arg: -1}}}, aggTestOut(types.StringType, types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "sum", Arg: 9}}}, aggTestOut(types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "sum", Arg: 2, Type: types.Int64Type}}}, aggTestOut(types.Int64Type)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "min", Arg: 2, Type: types.StringType}}}, aggTestOut(types.StringType)},
		{HashAggConfig{Aggs: []AggSpec{{Func: "sum", Arg: 0}}}, aggTestOut(types.Int64Type)},
	}
	for _, b := range runBad {
		op := opTestNew(t, "hash_agg", b.cfg, b.out)
		if _, err := testkit.Run(t, op, mem, bs...); err == nil {
			t.Errorf("config %+v: no error", b.cfg)
		}
	}
}

func TestHashAggManyGroups(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	const n = vector.OutBatchRows + 4464
	b := array.NewInt64Builder(mem)
	for i := range n {
		b.Append(int64(i))
	}
	b.Append(0)
	keys := b.NewArray()
	b.Release()
	sch := aggTestOut(types.Int64Type)
	rec := array.NewRecordBatch(sch.Arrow(), []arrow.Array{keys}, int64(n+1))
	keys.Release()
	defer rec.Release()
	op := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}},
		aggTestOut(types.Int64Type, types.Int64Type))
	c := &testkit.Collector{T: t, MaxRows: vector.OutBatchRows}
	ctx := context.Background()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	if err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != n || c.Batches != 2 {
		t.Fatalf("%d rows in %d batches, want %d in 2", len(c.Rows), c.Batches, n)
	}
	if c.Rows[0] != "[0,2]" || c.Rows[n-1] != fmt.Sprintf("[%d,1]", n-1) {
		t.Errorf("first %s last %s", c.Rows[0], c.Rows[n-1])
	}
}

// TestHashAggPartialFinalProperty splits random input over several partial
// aggregates, merges their states in a final one, and compares that and a
// complete aggregate with a naive map-based reference.
func TestHashAggPartialFinalProperty(t *testing.T) {
	aggs := []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 2, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "sum", Arg: 1, Type: aggTestDec0},
		{Func: "min", Arg: 2, Type: types.Int64Type},
		{Func: "max", Arg: 5, Type: types.StringType},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
		{Func: "avg", Arg: 2, Type: types.DecimalType(38, 2)},
		{Func: "sum", Arg: 4, Type: types.DecimalType(38, 2)},
		{Func: "avg", Arg: 4, Type: types.DecimalType(38, 3)},
	}
	// Keys: k (text) and f (a double used as a key).
	groupBy := []int{0, 3}
	groupCols := types.Schema{aggTestIn[0], aggTestIn[3]}
	finalOut := append(append(types.Schema{}, groupCols...), aggTestOut(types.Int64Type, types.Int64Type, aggTestDec0, aggTestDec0,
		types.Int64Type, types.StringType, types.Float64Type, types.DecimalType(38, 2), types.DecimalType(38, 2),
		types.DecimalType(38, 3))...)
	partialOut := PartialSchema(groupCols, aggs, aggTestIn)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		mem := testkit.Mem()
		nrows := rng.IntN(3000)
		words := []string{"a", "b", "", "longer word", "ü", "x y"}
		var rows []string
		type ref struct {
			count, countX int64
			sumX, sumG    *big.Int
			minX          *int64
			maxS          *string
			sumD          *big.Int
			nD            int64
		}
		refs := map[string]*ref{}
		var order []string
		for range nrows {
			var k, f, g, x, d, s any
			if rng.IntN(10) > 0 {
				k = words[rng.IntN(len(words))]
			}
			if rng.IntN(10) > 0 {
				f = float64(rng.IntN(3))
			}
			// g: huge values, so that sums overflow int64.
			g = rng.Int64N(math.MaxInt64) - math.MaxInt64/2
			if rng.IntN(4) == 0 {
				g = int64(math.MaxInt64 - rng.IntN(5))
			}
			if rng.IntN(5) > 0 {
				x = rng.Int64N(2_000_000) - 1_000_000
			}
			if rng.IntN(5) > 0 {
				d = fmt.Sprintf("%d.%02d", rng.IntN(2000)-1000, rng.IntN(100))
			}
			if rng.IntN(5) > 0 {
				s = words[rng.IntN(len(words))]
			}
			rows = append(rows, aggTestJSONRow(map[string]any{"k": k, "f": f, "g": g, "x": x, "d": d, "s": s}))
			key := aggTestJSONRow(map[string]any{"k": k, "f": f})
			r := refs[key]
			if r == nil {
				r = &ref{sumX: new(big.Int), sumG: new(big.Int), sumD: new(big.Int)}
				refs[key] = r
				order = append(order, key)
			}
			r.count++
			r.sumG.Add(r.sumG, big.NewInt(g.(int64)))
			if x != nil {
				xv := x.(int64)
				r.countX++
				r.sumX.Add(r.sumX, big.NewInt(xv))
				if r.minX == nil || xv < *r.minX {
					r.minX = &xv
				}
			}
			if s != nil {
				sv := s.(string)
				if r.maxS == nil || sv > *r.maxS {
					r.maxS = &sv
				}
			}
			if d != nil {
				u, _ := new(big.Int).SetString(strings.Replace(d.(string), ".", "", 1), 10)
				r.sumD.Add(r.sumD, u)
				r.nD++
			}
		}
		var want []string
		for _, key := range order {
			r := refs[key]
			var kf []any
			_ = aggTestKeyOf(key, &kf)
			vals := []string{aggTestJSON(kf[0]), aggTestJSON(kf[1]), fmt.Sprint(r.count), fmt.Sprint(r.countX)}
			if r.countX == 0 {
				vals = append(vals, "null")
			} else {
				vals = append(vals, `"`+r.sumX.String()+`"`)
			}
			vals = append(vals, `"`+r.sumG.String()+`"`)
			if r.minX == nil {
				vals = append(vals, "null")
			} else {
				vals = append(vals, fmt.Sprint(*r.minX))
			}
			if r.maxS == nil {
				vals = append(vals, "null")
			} else {
				vals = append(vals, aggTestJSON(*r.maxS))
			}
			if r.countX == 0 {
				vals = append(vals, "null", "null")
			} else {
				sf, _ := new(big.Float).SetInt(r.sumX).Float64()
				vals = append(vals, aggTestJSON(sf/float64(r.countX)), `"`+aggTestDivRound(r.sumX, r.countX, 0, 2)+`"`)
			}
			if r.nD == 0 {
				vals = append(vals, "null", "null")
			} else {
				vals = append(vals, `"`+aggTestDivRound(r.sumD, 1, 2, 2)+`"`, `"`+aggTestDivRound(r.sumD, r.nD, 2, 3)+`"`)
			}
			want = append(want, "["+strings.Join(vals, ",")+"]")
		}
		sort.Strings(want)

		// Split rows into batches, dealt to 3 partial operators.
		ctx := context.Background()
		parts := make([]exec.Operator, 3)
		partOut := make([]*testkit.Collector, 3)
		for i := range parts {
			parts[i] = opTestNew(t, "hash_agg", HashAggConfig{GroupBy: groupBy, Aggs: aggs, Phase: AggPartial}, partialOut)
			partOut[i] = &testkit.Collector{T: t}
			if err := parts[i].Open(ctx, testkit.TaskContext(mem)); err != nil {
				t.Fatal(err)
			}
		}
		complete := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: groupBy, Aggs: aggs}, finalOut)
		completeOut := &testkit.Collector{T: t}
		if err := complete.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		// Final input: keep the partial batches themselves (retained).
		var partialBatches []arrow.RecordBatch
		keep := testkit.Func(func(b exec.Batch) error {
			b.Rec.Retain()
			partialBatches = append(partialBatches, b.Rec)
			return nil
		})
		for i := 0; i < len(rows); {
			n := 1 + rng.IntN(200)
			j := min(len(rows), i+n)
			rec := testkit.Record(t, mem, aggTestIn, "["+strings.Join(rows[i:j], ",")+"]")
			p := rng.IntN(len(parts))
			if err := parts[p].ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, partOut[p]); err != nil {
				t.Fatal(err)
			}
			if err := complete.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, completeOut); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			i = j
		}
		for _, p := range parts {
			if err := p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep); err != nil {
				t.Fatal(err)
			}
			p.Close(ctx)
		}
		if err := complete.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, completeOut); err != nil {
			t.Fatal(err)
		}
		complete.Close(ctx)
		final := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: groupBy, Aggs: aggs, Phase: AggFinal}, finalOut)
		finalOut2 := &testkit.Collector{T: t}
		if err := final.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		// Feed the partial states in a shuffled order.
		rng.Shuffle(len(partialBatches), func(i, j int) { partialBatches[i], partialBatches[j] = partialBatches[j], partialBatches[i] })
		for _, r := range partialBatches {
			if err := final.ProcessBatch(ctx, 0, exec.Batch{Rec: r}, finalOut2); err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		if err := final.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, finalOut2); err != nil {
			t.Fatal(err)
		}
		final.Close(ctx)
		testkit.Equal(t, fmt.Sprintf("round %d complete", round), completeOut.Sorted(), want)
		testkit.Equal(t, fmt.Sprintf("round %d partial+final", round), finalOut2.Sorted(), want)
		mem.AssertSize(t, 0)
		if t.Failed() {
			return
		}
	}
}

// aggTestDivRound formats (v / 10^vs) / n at scale s, rounded half away from zero.
func aggTestDivRound(v *big.Int, n int64, vs, s int) string {
	num := new(big.Int).Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
	den := new(big.Int).Mul(big.NewInt(n), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(vs)), nil))
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(int64(num.Sign())))
	}
	neg := q.Sign() < 0
	digits := new(big.Int).Abs(q).String()
	for len(digits) <= s {
		digits = "0" + digits
	}
	out := digits
	if s > 0 {
		out = digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

// A few JSON helpers for the reference.
func aggTestJSONRow(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = aggTestJSON(k) + ":" + aggTestJSON(m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func aggTestJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func aggTestKeyOf(obj string, dst *[]any) error {
	// obj is {"f":...,"k":...} from aggTestJSONRow: return [k, f].
	var m map[string]any
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		return err
	}
	*dst = []any{m["k"], m["f"]}
	return nil
}

// BenchmarkHashAggWords is the partial hash_agg of WordCount alone: count(*) by
// word over the words of ten copies of the King James Bible (lower-cased, split on
// ' ', empty words dropped), in batches of the words of 64 KiB of text as the file
// source makes them. Unlike BenchmarkUnnestCount, most words are already in the
// table, as in the end-to-end query.
func BenchmarkHashAggWords(b *testing.B) {
	raw, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Fatalf("corpus: %v", err)
	}
	mem := memory.NewGoAllocator()
	word := types.Schema{{Name: "word", Type: types.StringType}}
	batches, rows := wordBatches(mem, word, strings.ToLower(string(raw)))
	defer testkit.Release(batches)
	const copies = 10
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}
	out := PartialSchema(word, aggs, word)
	b.SetBytes(int64(copies * len(raw)))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		agg := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, out)
		if err := agg.Open(ctx, testkit.TaskContext(mem)); err != nil {
			b.Fatal(err)
		}
		for range copies {
			for _, bt := range batches {
				if err := agg.ProcessBatch(ctx, 0, bt, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		groups := 0
		sink := testkit.Func(func(bt exec.Batch) error { groups += bt.NumRows(); return nil })
		if err := agg.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, sink); err != nil {
			b.Fatal(err)
		}
		agg.Close(ctx)
		if groups < 10000 {
			b.Fatalf("%d words", groups)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*copies*rows), "ns/row")
}

// wordBatches splits text as WordCount's file source and unnest do: batches of
// the non-empty, space-separated words of about 64 KiB of lines each, in one
// column of schema word. It returns them and their number of rows.
func wordBatches(mem memory.Allocator, word types.Schema, text string) ([]exec.Batch, int) {
	var batches []exec.Batch
	rows := 0
	for len(text) > 0 {
		n := min(len(text), 64<<10)
		if i := strings.LastIndexByte(text[:n], '\n'); i > 0 && n < len(text) {
			n = i + 1
		}
		sb := array.NewStringBuilder(mem)
		for _, line := range strings.Split(text[:n], "\n") {
			for _, w := range strings.Split(line, " ") {
				if w != "" {
					sb.Append(w)
				}
			}
		}
		text = text[n:]
		col := sb.NewArray()
		sb.Release()
		rows += col.Len()
		batches = append(batches, exec.Batch{Rec: array.NewRecordBatch(word.Arrow(), []arrow.Array{col}, int64(col.Len()))})
		col.Release()
	}
	return batches, rows
}

// BenchmarkHashAggTwoPhase is the work WordCount does at parallelism 2 after its
// sources end, and not at parallelism 1: two partial aggregates, each holding
// the whole vocabulary of the King James Bible (58,733 words), emit their
// groups through a hash exchange to two final aggregates, which merge them and
// emit the counts. The partials' input is not timed. It reports, per run, the
// milliseconds of the partials' emit and exchange (emit-ms), of the finals'
// merge (merge-ms) and of their emit (final-emit-ms), each summed over both
// tasks, on the engine's pooled allocator.
func BenchmarkHashAggTwoPhase(b *testing.B) {
	raw, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Fatalf("corpus: %v", err)
	}
	mem := vector.NewPoolAllocator()
	word := types.Schema{{Name: "word", Type: types.StringType}}
	text := strings.ToLower(string(raw))
	// The two partials see the text in different orders, as the subtasks of a
	// file do its pieces.
	var inputs [2][]exec.Batch
	inputs[0], _ = wordBatches(mem, word, text[len(text)/2:]+text[:len(text)/2])
	inputs[1], _ = wordBatches(mem, word, text)
	defer testkit.Release(inputs[0])
	defer testkit.Release(inputs[1])
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}
	partialOut := PartialSchema(word, aggs, word)
	finalOut := types.Schema{{Name: "word", Type: types.StringType}, {Name: "n", Type: types.Int64Type}}
	ctx := context.Background()
	var emit, merge, finalEmit time.Duration
	for b.Loop() {
		b.StopTimer()
		var partials [2]exec.Operator
		for i := range partials {
			partials[i] = opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, partialOut)
			if err := partials[i].Open(ctx, testkit.TaskContext(mem)); err != nil {
				b.Fatal(err)
			}
			for _, bt := range inputs[i] {
				if err := partials[i].ProcessBatch(ctx, 0, bt, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		finals := [2]*keepSender{{}, {}}
		b.StartTimer()
		t := time.Now()
		for _, p := range partials {
			out := task.NewOutput(mem, &exec.TaskMetrics{})
			out.AddEdge(exec.Partition{Kind: exec.Hash, Keys: []int{0}}, []task.Sender{finals[0], finals[1]})
			if err := p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, out); err != nil {
				b.Fatal(err)
			}
		}
		emit += time.Since(t)
		groups := 0
		for _, f := range finals {
			t = time.Now()
			fin := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggFinal}, finalOut)
			if err := fin.Open(ctx, testkit.TaskContext(mem)); err != nil {
				b.Fatal(err)
			}
			for _, bt := range f.got {
				if err := fin.ProcessBatch(ctx, 0, bt, nil); err != nil {
					b.Fatal(err)
				}
			}
			merge += time.Since(t)
			t = time.Now()
			sink := testkit.Func(func(bt exec.Batch) error { groups += bt.NumRows(); return nil })
			if err := fin.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, sink); err != nil {
				b.Fatal(err)
			}
			finalEmit += time.Since(t)
			fin.Close(ctx)
		}
		b.StopTimer()
		for i := range partials {
			partials[i].Close(ctx)
			testkit.Release(finals[i].got)
		}
		if groups < 50000 {
			b.Fatalf("%d groups", groups)
		}
		b.StartTimer()
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(per(emit), "emit-ms")
	b.ReportMetric(per(merge), "merge-ms")
	b.ReportMetric(per(finalEmit), "final-emit-ms")
}

// keepSender is a channel's sending end that keeps the batches it is sent.
type keepSender struct{ got []exec.Batch }

func (k *keepSender) Push(ctx context.Context, b exec.Batch, s exec.Signal) error {
	if b.Rec != nil {
		k.got = append(k.got, b)
	}
	return nil
}
