package table

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRangeFraction: the fraction of a table's rows in a range of an integer
// column, from the sample of rows spread over its segments. The table's
// 400k ids run 0..99999 in order, each on 4 consecutive rows (a block of
// first rows would see only the smallest), every 7th row NULL, and its last
// batch is shorter than the others (it must not weigh as much); the
// fractions are checked against a count of the rows.
func TestRangeFraction(t *testing.T) {
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
	id := func(i int) (int64, bool) { return int64(i / 4), i%7 != 3 }
	for i := range n {
		if v, ok := id(i); ok {
			ib.Append(v)
		} else {
			ib.AppendNull()
		}
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
	for _, r := range []struct{ lo, hi int64 }{
		{0, 99_999}, {25_000, 49_999}, {math.MinInt64, 9_999}, {90_000, math.MaxInt64}, {50_000, 50_999},
	} {
		count := 0
		for i := range n {
			if v, ok := id(i); ok && v >= r.lo && v <= r.hi {
				count++
			}
		}
		want := float64(count) / n
		got, ok := s.RangeFraction("t1", 0, r.lo, r.hi)
		if !ok || math.Abs(got-want) > 0.02 {
			t.Errorf("[%d, %d]: %v (ok %v), want %v within 0.02", r.lo, r.hi, got, ok, want)
		}
	}
	// Past every value: half a sampled row, not nothing.
	if got, ok := s.RangeFraction("t1", 0, 200_000, 300_000); !ok || got <= 0 || got > 0.001 {
		t.Errorf("empty range: %v (ok %v), want a little above 0", got, ok)
	}
	// A text column, or one past the table's: unknown.
	for _, col := range []int{1, 5} {
		if f, ok := s.RangeFraction("t1", col, 0, 10); ok {
			t.Errorf("column %d: %v, want unknown", col, f)
		}
	}
}
