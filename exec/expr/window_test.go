package expr

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestWindowBounds: the windows holding an instant, worked by hand from
// Flink's definitions (windows aligned to the epoch), before the epoch too.
func TestWindowBounds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sec := func(s float64) int64 { return int64(s * 1e6) }
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	for _, s := range []float64{0, 7.5, 10, -0.5} {
		b.Append(arrow.Timestamp(sec(s)))
	}
	b.AppendNull()
	ts := b.NewArray()
	b.Release()
	defer ts.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "ts", Type: ts.DataType(), Nullable: true}}, nil), []arrow.Array{ts}, int64(ts.Len()))
	defer rec.Release()
	col := Column(0, types.TimestampType, "ts")
	lit := func(s float64) *Expr { return Literal(types.IntValue(sec(s))) }
	for _, c := range []struct {
		e    *Expr
		want []float64
	}{
		{Call("tumble_start", types.TimestampType, col, lit(5)), []float64{0, 5, 10, -5}},
		{Call("tumble_end", types.TimestampType, col, lit(5)), []float64{5, 10, 15, 0}},
		// slide 2 s, size 5 s: 7.5 is in [4,9), [6,11); 10 in [6,11), [8,13), [10,15)
		{Call("hop_first", types.TimestampType, col, lit(2), lit(5)), []float64{-4, 4, 6, -4}},
		// step 2 s, size 6 s: 7.5 is in [6,8), [6,10), [6,12)
		{Call("cumulate_first_end", types.TimestampType, col, lit(2), lit(6)), []float64{2, 8, 12, 0}},
	} {
		res, err := Eval(c.e, rec, mem)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		got := res.(*array.Timestamp)
		for i, w := range c.want {
			if int64(got.Value(i)) != sec(w) {
				t.Errorf("%s of %v: %v, want %v s", c.e.Func, time.Duration(int64(ts.(*array.Timestamp).Value(i)))*time.Microsecond, time.Duration(got.Value(i))*time.Microsecond, w)
			}
		}
		if !got.IsNull(4) {
			t.Errorf("%s of NULL is not NULL", c.e.Func)
		}
		res.Release()
	}
}
