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
