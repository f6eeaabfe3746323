package exec

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

var filterSchema = types.Schema{
	{Name: "x", Type: types.Int64Type}, {Name: "s", Type: types.StringType},
	{Name: "d", Type: types.DecimalType(10, 2)}, {Name: "b", Type: types.BoolType},
	{Name: "t", Type: types.TimestampType}, {Name: "f", Type: types.Float64Type},
}

const filterRows = `[
	{"x": 1, "s": "a", "d": "1.50", "b": true, "t": "2024-01-01 00:00:00", "f": 0.5},
	{"x": null, "s": null, "d": null, "b": null, "t": null, "f": null},
	{"x": 3, "s": "ccc", "d": "-2.25", "b": false, "t": "2024-01-03 00:00:00", "f": 1e20},
	{"x": 5, "s": "", "d": "0.00", "b": true, "t": "2024-01-05 00:00:00", "f": -1},
	{"x": 2, "s": "bb", "d": "9.99", "b": null, "t": "2024-01-02 00:00:00", "f": 2}
]`

func filterCol(i int) *expr.Expr { return expr.Column(i, filterSchema[i].Type, filterSchema[i].Name) }

func TestFilter(t *testing.T) {
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	all := []string{
		`[1,"a","1.50",true,"2024-01-01T00:00:00",0.5]`,
		`[null,null,null,null,null,null]`,
		`[3,"ccc","-2.25",false,"2024-01-03T00:00:00",100000000000000000000]`,
		`[5,"","0.00",true,"2024-01-05T00:00:00",-1]`,
		`[2,"bb","9.99",null,"2024-01-02T00:00:00",2]`,
	}
	tests := []struct {
		name string
		cond *expr.Expr
		want []string
	}{
		// A NULL comparison drops the row, as WHERE does.
		{"x > 2: contiguous rows", expr.Call(">", types.BoolType, filterCol(0), lit(2)), []string{all[2], all[3]}},
		{"x <> 3: scattered rows", expr.Call("<>", types.BoolType, filterCol(0), lit(3)), []string{all[0], all[3], all[4]}},
		{"b: NULL is false", filterCol(3), []string{all[0], all[3]}},
		{"s <> '': text", expr.Call("<>", types.BoolType, filterCol(1), expr.Literal(types.StringValue(""))),
			[]string{all[0], all[2], all[4]}},
		{"x is not null or true: all rows", expr.Call("or", types.BoolType,
			expr.Call("is_null", types.BoolType, filterCol(0)), expr.Literal(types.BoolValue(true))), all},
		{"x > 100: no rows", expr.Call(">", types.BoolType, filterCol(0), lit(100)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := opTestMem()
			defer mem.AssertSize(t, 0)
			bs := opTestBatches(t, mem, filterSchema, filterRows)
			defer opTestRelease(bs)
			op := opTestNew(t, "filter", FilterConfig{Cond: tc.cond}, filterSchema)
			c, err := opTestRun(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			opTestEqual(t, "rows", c.rows, tc.want)
			if len(c.signals) != 1 || c.signals[0].Kind != EndOfStream {
				t.Errorf("signals %v", c.signals)
			}
		})
	}
}

func TestFilterChangeKindsAndPassThrough(t *testing.T) {
	mem := opTestMem()
	defer mem.AssertSize(t, 0)
	bs := opTestBatches(t, mem, filterSchema, filterRows)
	defer opTestRelease(bs)
	bs[0].Ops = []ChangeKind{Insert, Delete, UpdateBefore, UpdateAfter, Delete}
	op := opTestNew(t, "filter", FilterConfig{Cond: expr.Call("<>", types.BoolType, filterCol(0),
		expr.Literal(types.IntValue(3)))}, filterSchema)
	c, err := opTestRun(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	opTestEqual(t, "rows", c.rows, []string{
		`[1,"a","1.50",true,"2024-01-01T00:00:00",0.5]`,
		`update_after [5,"","0.00",true,"2024-01-05T00:00:00",-1]`,
		`delete [2,"bb","9.99",null,"2024-01-02T00:00:00",2]`,
	})

	// When every row passes, the batch itself goes on.
	ctx := context.Background()
	op = opTestNew(t, "filter", FilterConfig{Cond: expr.Literal(types.BoolValue(true))}, filterSchema)
	if err := op.Open(ctx, opTestTC(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	var got Batch
	err = op.ProcessBatch(ctx, 0, bs[0], opTestFunc(func(b Batch) error { got = b; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rec != bs[0].Rec {
		t.Errorf("an all-true filter copied its batch")
	}
	if err := op.ProcessSignal(ctx, 0, Signal{Kind: Barrier, Checkpoint: 2}, &opTestCollector{t: t}); err != nil {
		t.Fatal(err)
	}
}

func TestFilterNotBoolean(t *testing.T) {
	mem := opTestMem()
	defer mem.AssertSize(t, 0)
	bs := opTestBatches(t, mem, filterSchema, filterRows)
	defer opTestRelease(bs)
	op := opTestNew(t, "filter", FilterConfig{Cond: filterCol(0)}, filterSchema)
	if _, err := opTestRun(t, op, mem, bs...); err == nil {
		t.Errorf("bigint condition: no error")
	}
}
