// Package testkit holds what the runtime's tests share: records from JSON
// literals, a collector that turns what an operator emits into comparable text
// rows, and a small driver of one operator. Only tests import it.
//
// It may import exec, exec/vector and exec/types.
package testkit

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// Mem returns a checked allocator; callers defer mem.AssertSize(t, 0).
func Mem() *memory.CheckedAllocator {
	return memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
}

// TaskContext returns the context of a lone test task allocating from mem.
func TaskContext(mem memory.Allocator) *exec.TaskContext {
	return &exec.TaskContext{JobID: "job-test", TaskName: "test[0/1]", Parallelism: 1, Alloc: mem}
}

// Record builds a record of schema s from a JSON array of row objects keyed by
// column name, e.g. `[{"a": 1, "b": "x"}, {"a": null, "b": "y"}]`.
func Record(t testing.TB, mem memory.Allocator, s types.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, s.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON(%s): %v", rows, err)
	}
	return rec
}

// Collector records emitted batches as text rows (one JSON array per row,
// prefixed with the change kind when it is not an insert) and signals.
type Collector struct {
	Rows    []string
	Batches int
	Signals []exec.Signal
	// MaxRows, when set, fails the test on a bigger batch.
	MaxRows int
	T       testing.TB
}

// Collect records b's rows, checking the batch is well formed.
func (c *Collector) Collect(ctx context.Context, b exec.Batch) error {
	c.Batches++
	n := b.NumRows()
	if n == 0 {
		c.T.Errorf("operator emitted an empty batch")
	}
	if c.MaxRows > 0 && n > c.MaxRows {
		c.T.Errorf("batch of %d rows, more than %d", n, c.MaxRows)
	}
	if b.Ops != nil && len(b.Ops) != n {
		c.T.Errorf("batch of %d rows with %d change kinds", n, len(b.Ops))
	}
	c.Rows = append(c.Rows, Rows(b)...)
	return nil
}

// CollectSignal records s.
func (c *Collector) CollectSignal(ctx context.Context, s exec.Signal) error {
	c.Signals = append(c.Signals, s)
	return nil
}

// Sorted returns the rows in sorted order, for operators whose output order is
// not defined.
func (c *Collector) Sorted() []string {
	r := slices.Clone(c.Rows)
	slices.Sort(r)
	return r
}

// Rows formats the rows of b.
func Rows(b exec.Batch) []string {
	rec := b.Rec
	out := make([]string, 0, b.NumRows())
	for i := range b.NumRows() {
		vals := make([]any, rec.NumCols())
		for j, col := range rec.Columns() {
			vals[j] = Value(col, i)
		}
		js, err := json.Marshal(vals)
		if err != nil {
			panic(err)
		}
		s := string(js)
		if op := b.Op(i); op != exec.Insert {
			s = op.String() + " " + s
		}
		out = append(out, s)
	}
	return out
}

// Value returns row i of col as Rows formats it.
func Value(col arrow.Array, i int) any {
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

// Func is a Collector that hands batches to a function and drops signals.
type Func func(b exec.Batch) error

// Collect calls f.
func (f Func) Collect(ctx context.Context, b exec.Batch) error { return f(b) }

// CollectSignal drops s.
func (f Func) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }

// Equal fails unless got equals want.
func Equal(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// Run opens op, feeds each batch to input 0, sends EndOfStream and closes
// op (twice, to check that is safe), returning what it emitted.
func Run(t testing.TB, op exec.Operator, mem memory.Allocator, batches ...exec.Batch) (*Collector, error) {
	t.Helper()
	ctx := context.Background()
	c := &Collector{T: t}
	defer func() {
		if err := op.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := op.Close(ctx); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	if err := op.Open(ctx, TaskContext(mem)); err != nil {
		return c, fmt.Errorf("Open: %w", err)
	}
	for _, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			return c, err
		}
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		return c, err
	}
	return c, nil
}

// Fields returns a schema of columns c0, c1, ... of types ts.
func Fields(ts ...types.Type) types.Schema {
	s := make(types.Schema, len(ts))
	for i, t := range ts {
		s[i] = types.Field{Name: fmt.Sprintf("c%d", i), Type: t}
	}
	return s
}

// Batches builds one batch per JSON literal, all of schema s. The caller
// releases them (opTestRelease).
func Batches(t testing.TB, mem memory.Allocator, s types.Schema, rows ...string) []exec.Batch {
	t.Helper()
	out := make([]exec.Batch, len(rows))
	for i, r := range rows {
		out[i] = exec.Batch{Rec: Record(t, mem, s, r)}
	}
	return out
}

// Release releases every batch of bs.
func Release(bs []exec.Batch) {
	for _, b := range bs {
		b.Rec.Release()
	}
}

// Main runs a package's tests with exec/vector's slice pools poisoning what
// they take back, so that a slice used after it was put reads as garbage;
// benchmarks run on the pools as the engine does.
func Main(m *testing.M) {
	flag.Parse()
	vector.PoisonSlices = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}
