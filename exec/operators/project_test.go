package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

func TestProject(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	bs[0].Ops = []exec.ChangeKind{exec.Insert, exec.Delete, exec.Insert, exec.Insert, exec.UpdateAfter}
	exprs := []*expr.Expr{
		filterCol(1),
		expr.Call("+", types.Int64Type, filterCol(0), expr.Literal(types.IntValue(10))),
		expr.Call("=", types.BoolType, filterCol(1), expr.Literal(types.StringValue("a"))),
		filterCol(1),
		expr.Literal(types.StringValue("k")),
	}
	out := types.Schema{{Name: "s", Type: types.StringType}, {Name: "x10", Type: types.Int64Type},
		{Name: "isa", Type: types.BoolType}, {Name: "s2", Type: types.StringType}, {Name: "k", Type: types.StringType}}
	op := opTestNew(t, "project", ProjectConfig{Exprs: exprs}, out)
	ctx := context.Background()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	c := &testkit.Collector{T: t}
	var shared bool
	err := op.ProcessBatch(ctx, 0, bs[0], testkit.Func(func(b exec.Batch) error {
		// A bare column reference shares the input's array.
		shared = b.Rec.Column(0) == bs[0].Rec.Column(1) && b.Rec.Column(3) == bs[0].Rec.Column(1)
		return c.Collect(ctx, b)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !shared {
		t.Errorf("column reference was copied")
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{
		`["a",11,true,"a","k"]`,
		`delete [null,null,null,null,"k"]`,
		`["ccc",13,false,"ccc","k"]`,
		`["",15,false,"","k"]`,
		`update_after ["bb",12,false,"bb","k"]`,
	})
	if len(c.Signals) != 1 {
		t.Errorf("signals %v", c.Signals)
	}
}

func TestProjectErrors(t *testing.T) {
	if _, err := builtins().NewOperator(opTestSpec("project", ProjectConfig{Exprs: []*expr.Expr{filterCol(0)}}, nil)); err == nil {
		t.Errorf("1 expression for 0 columns: accepted")
	}
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	// The output schema says text, the expression is bigint.
	op := opTestNew(t, "project", ProjectConfig{Exprs: []*expr.Expr{filterCol(1), filterCol(0)}},
		types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.StringType}})
	if _, err := testkit.Run(t, op, mem, bs...); err == nil {
		t.Errorf("type mismatch: no error")
	}
	op = opTestNew(t, "project", ProjectConfig{Exprs: []*expr.Expr{expr.Column(17, types.Int64Type, "z")}}, aggTestOut(types.Int64Type))
	if _, err := testkit.Run(t, op, mem, bs...); err == nil {
		t.Errorf("column out of range: no error")
	}
}

// TestProjectReuse: an expression holding an earlier one reads its output
// (a repeated one shares its array), and the values are those of computing
// each expression on its own, worked out by hand below.
func TestProjectReuse(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	plus10 := func() *expr.Expr { return expr.Call("+", types.Int64Type, filterCol(0), lit(10)) }
	exprs := []*expr.Expr{
		plus10(),
		expr.Call("*", types.Int64Type, plus10(), expr.Call("-", types.Int64Type, plus10(), lit(1))),
		plus10(),
		expr.Call("+", types.Int64Type, filterCol(0), lit(11)), // not the same: stays
		expr.Call("-", types.Int64Type, expr.Call("+", types.Int64Type, filterCol(0), lit(11)), plus10()),
	}
	out := types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.Int64Type},
		{Name: "c", Type: types.Int64Type}, {Name: "d", Type: types.Int64Type}, {Name: "e", Type: types.Int64Type}}
	op := opTestNew(t, "project", ProjectConfig{Exprs: exprs}, out)
	ctx := context.Background()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	c := &testkit.Collector{T: t}
	var shared bool
	err := op.ProcessBatch(ctx, 0, bs[0], testkit.Func(func(b exec.Batch) error {
		shared = b.Rec.Column(0) == b.Rec.Column(2)
		return c.Collect(ctx, b)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !shared {
		t.Errorf("a repeated expression was computed again")
	}
	// x = 1, NULL, 3, 5, 2: (x+10)*(x+9), x+10, x+11, 1.
	testkit.Equal(t, "rows", c.Rows, []string{
		`[11,110,11,12,1]`,
		`[null,null,null,null,null]`,
		`[13,156,13,14,1]`,
		`[15,210,15,16,1]`,
		`[12,132,12,13,1]`,
	})
}
