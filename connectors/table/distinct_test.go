package table

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDistinctSample: estimates of a table of 400k rows in segments, whose
// id is clustered (each value on 4 consecutive rows, as TPC-H's lineitem
// holds its order keys: 100k values) and whose name takes 25 values in turn.
// A block of the first rows would see 16k ids; rows spread over the table
// see the ids as a key's, within a factor of the truth that the planner's
// caps mend (at most the table's rows), and the names as the 25 they are.
func TestDistinctSample(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create("t1"); err != nil {
		t.Fatal(err)
	}
	const n = 400_000
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range n {
		ib.Append(int64(i / 4))
		sb.Append(fmt.Sprintf("nation %d", i%25))
	}
	cols := []arrow.Array{ib.NewArray(), sb.NewArray()}
	rec := array.NewRecordBatch(schema.Arrow(), cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	tx, err := s.Begin("t1", Constraints{Table: "t", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(rec); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tb, err := s.table("t1")
	if err != nil {
		t.Fatal(err)
	}
	if segs := len(tb.current.Segments); segs == 0 {
		t.Fatal("the rows are not in segments")
	}
	ids, ok := s.Distinct("t1", 0)
	if !ok || ids < 100_000/2 || ids > n {
		t.Errorf("ids: %v distinct (ok %v), want 100000 within a factor of 2, at most %d", ids, ok, n)
	}
	names, ok := s.Distinct("t1", 1)
	if !ok || names != 25 {
		t.Errorf("names: %v distinct (ok %v), want 25", names, ok)
	}
	// A column past the table's: unknown.
	if d, ok := s.Distinct("t1", 5); ok {
		t.Errorf("column 5: %v distinct, want none", d)
	}
}
