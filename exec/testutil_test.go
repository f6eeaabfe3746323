package exec

// Shared helpers of the operator tests: records from JSON literals, a collector
// that turns what an operator emits into comparable text rows, and a small
// driver.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// opTestMem returns a checked allocator; callers defer mem.AssertSize(t, 0).
func opTestMem() *memory.CheckedAllocator {
	return memory.NewCheckedAllocator(NewPoisoningPoolAllocator())
}

func opTestTC(mem memory.Allocator) *TaskContext {
	return &TaskContext{JobID: "job-test", TaskName: "test[0/1]", Parallelism: 1, Alloc: mem}
}

// opTestRec builds a record of schema s from a JSON array of row objects keyed by
// column name, e.g. `[{"a": 1, "b": "x"}, {"a": null, "b": "y"}]`.
func opTestRec(t testing.TB, mem memory.Allocator, s types.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, s.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON(%s): %v", rows, err)
	}
	return rec
}

// opTestCollector records emitted batches as text rows (one JSON array per row,
// prefixed with the change kind when it is not an insert) and signals.
type opTestCollector struct {
	rows    []string
	batches int
	signals []Signal
	// maxRows, when set, fails the test on a bigger batch.
	maxRows int
	t       testing.TB
}

func (c *opTestCollector) Collect(ctx context.Context, b Batch) error {
	c.batches++
	n := b.NumRows()
	if n == 0 {
		c.t.Errorf("operator emitted an empty batch")
	}
	if c.maxRows > 0 && n > c.maxRows {
		c.t.Errorf("batch of %d rows, more than %d", n, c.maxRows)
	}
	if b.Ops != nil && len(b.Ops) != n {
		c.t.Errorf("batch of %d rows with %d change kinds", n, len(b.Ops))
	}
	c.rows = append(c.rows, opTestRows(b)...)
	return nil
}

func (c *opTestCollector) CollectSignal(ctx context.Context, s Signal) error {
	c.signals = append(c.signals, s)
	return nil
}

// sorted returns the rows in sorted order, for operators whose output order is
// not defined.
func (c *opTestCollector) sorted() []string {
	r := slices.Clone(c.rows)
	slices.Sort(r)
	return r
}

// opTestRows formats the rows of b.
func opTestRows(b Batch) []string {
	rec := b.Rec
	out := make([]string, 0, b.NumRows())
	for i := range b.NumRows() {
		vals := make([]any, rec.NumCols())
		for j, col := range rec.Columns() {
			vals[j] = opTestValue(col, i)
		}
		js, err := json.Marshal(vals)
		if err != nil {
			panic(err)
		}
		s := string(js)
		if op := b.Op(i); op != Insert {
			s = op.String() + " " + s
		}
		out = append(out, s)
	}
	return out
}

func opTestValue(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Timestamp:
		return a.ValueStr(i)
	case *array.Float64:
		if v := a.Value(i); v != v {
			return "NaN"
		}
	}
	return col.GetOneForMarshal(i)
}

// opTestFunc is a Collector that hands batches to a function and drops signals.
type opTestFunc func(b Batch) error

func (f opTestFunc) Collect(ctx context.Context, b Batch) error        { return f(b) }
func (f opTestFunc) CollectSignal(ctx context.Context, s Signal) error { return nil }

// opTestEqual fails unless got equals want.
func opTestEqual(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// opTestRun opens op, feeds each batch to input 0, sends EndOfStream and closes
// op (twice, to check that is safe), returning what it emitted.
func opTestRun(t testing.TB, op Operator, mem memory.Allocator, batches ...Batch) (*opTestCollector, error) {
	t.Helper()
	ctx := context.Background()
	c := &opTestCollector{t: t}
	defer func() {
		if err := op.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := op.Close(ctx); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	if err := op.Open(ctx, opTestTC(mem)); err != nil {
		return c, fmt.Errorf("Open: %w", err)
	}
	for _, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			return c, err
		}
	}
	if err := op.ProcessSignal(ctx, 0, Signal{Kind: EndOfStream}, c); err != nil {
		return c, err
	}
	return c, nil
}

// opTestSpec builds an OperatorSpec.
func opTestSpec(kind string, cfg any, out types.Schema) OperatorSpec {
	return OperatorSpec{Kind: kind, Config: MustConfig(cfg), Out: out}
}

// opTestNew builds an operator through the registry, as a TaskManager does.
func opTestNew(t testing.TB, kind string, cfg any, out types.Schema) Operator {
	t.Helper()
	op, err := NewRegistry().NewOperator(opTestSpec(kind, cfg, out))
	if err != nil {
		t.Fatalf("NewOperator(%s): %v", kind, err)
	}
	return op
}

func opTestFields(ts ...types.Type) types.Schema {
	s := make(types.Schema, len(ts))
	for i, t := range ts {
		s[i] = types.Field{Name: fmt.Sprintf("c%d", i), Type: t}
	}
	return s
}

// opTestBatches builds one batch per JSON literal, all of schema s. The caller
// releases them (opTestRelease).
func opTestBatches(t testing.TB, mem memory.Allocator, s types.Schema, rows ...string) []Batch {
	t.Helper()
	out := make([]Batch, len(rows))
	for i, r := range rows {
		out[i] = Batch{Rec: opTestRec(t, mem, s, r)}
	}
	return out
}

func opTestRelease(bs []Batch) {
	for _, b := range bs {
		b.Rec.Release()
	}
}

// skipWithoutEval skips a test that needs expr.Eval while it is still a stub.
func skipWithoutEval(t *testing.T) {
	t.Helper()
	mem := memory.NewGoAllocator()
	rec := opTestRec(t, mem, types.Schema{{Name: "b", Type: types.BoolType}}, `[{"b": true}]`)
	defer rec.Release()
	a, err := expr.Eval(expr.Column(0, types.BoolType, "b"), rec, mem)
	if err != nil {
		t.Skipf("expr.Eval not available: %v", err)
	}
	a.Release()
}
