package vector

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// gatherTestArray builds 300 rows of type dt, NULL at every seventh row.
func gatherTestArray(mem memory.Allocator, dt arrow.DataType) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := range 300 {
		if i%7 == 3 {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.BooleanBuilder:
			b.Append(i%3 == 0)
		case *array.Int64Builder:
			b.Append(int64(i * 1000003))
		case *array.Float64Builder:
			b.Append(float64(i) / 4)
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(i * 86400))
		case *array.Decimal128Builder:
			b.Append(decimal128.FromI64(int64(i*7919 - 50000)))
		case *array.StringBuilder:
			b.Append(fmt.Sprintf("row %d %s", i, "xxxxxxxxxxxxxxxxxxxx"[:i%21]))
		}
	}
	return b.NewArray()
}

// TestGatherDenseRuns gathers a selection that keeps most rows (the run-copying
// path) from sliced arrays of every gatherable type and checks each row against
// the source row by Arrow's own accessors.
func TestGatherDenseRuns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Timestamp_us, &arrow.Decimal128Type{Precision: 15, Scale: 2},
		arrow.BinaryTypes.String,
	}
	// Rows 0..274 of the slice but every 40th and 41st, and 100..139 entirely:
	// runs of 38 rows on average.
	var idx []int32
	for i := range int32(275) {
		if i%40 != 0 && i%40 != 1 && (i < 100 || i >= 140) {
			idx = append(idx, i)
		}
	}
	if denseRuns(idx) == nil {
		t.Fatal("the selection does not take the run path")
	}
	for _, dt := range types {
		full := gatherTestArray(mem, dt)
		src := array.NewSlice(full, 5, 290)
		full.Release()
		got, err := GatherArray(mem, src, idx)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if got.Len() != len(idx) {
			t.Fatalf("%s: %d rows, want %d", dt, got.Len(), len(idx))
		}
		nulls := 0
		for j, i := range idx {
			if got.IsNull(j) != src.IsNull(int(i)) || got.ValueStr(j) != src.ValueStr(int(i)) {
				t.Fatalf("%s: row %d is %s, source row %d is %s", dt, j, got.ValueStr(j), i, src.ValueStr(int(i)))
			}
			if src.IsNull(int(i)) {
				nulls++
			}
		}
		if got.NullN() != nulls {
			t.Fatalf("%s: NullN %d, want %d", dt, got.NullN(), nulls)
		}
		got.Release()
		src.Release()
	}
}

// TestDenseRunsRefuses checks the selections that must take the row-by-row
// path: descending, repeated or negative indexes, and short runs.
func TestDenseRunsRefuses(t *testing.T) {
	ascending := make([]int32, 64)
	everyOther := make([]int32, 64)
	for i := range ascending {
		ascending[i] = int32(i)
		everyOther[i] = int32(2 * i)
	}
	if r := denseRuns(ascending); len(r) != 1 || r[0] != (rowRun{src: 0, n: 64}) {
		t.Fatalf("runs of 0..63: %v", r)
	}
	for name, idx := range map[string][]int32{
		"descending": append(append([]int32(nil), ascending[:40]...), ascending[:24]...),
		"repeated":   append(append([]int32(nil), ascending[:40]...), 39, 40),
		"negative":   append([]int32{-1}, ascending...),
		"short runs": everyOther,
	} {
		if r := denseRuns(idx); r != nil {
			t.Errorf("%s: runs %v, want none", name, r)
		}
	}
}

// TestGatherAllRows: a selection of every row in order gives the array
// itself, with a reference of its own (releasing it leaves the source
// usable); one row short of that, or out of order, a copy.
func TestGatherAllRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := gatherTestArray(mem, arrow.BinaryTypes.String)
	defer src.Release()
	all := make([]int32, src.Len())
	for i := range all {
		all[i] = int32(i)
	}
	got, err := GatherArray(mem, src, all)
	if err != nil {
		t.Fatal(err)
	}
	if got != src {
		t.Fatal("all rows in order: not the array itself")
	}
	got.Release()
	if src.ValueStr(1) != "row 1 x" {
		t.Fatalf("the source after releasing the gather: row 1 is %q", src.ValueStr(1))
	}
	for _, idx := range [][]int32{all[:len(all)-1], all[1:]} {
		got, err := GatherArray(mem, src, idx)
		if err != nil {
			t.Fatal(err)
		}
		if got == src || got.Len() != len(idx) || got.ValueStr(0) != src.ValueStr(int(idx[0])) {
			t.Fatalf("%d rows from %d: %d rows, first %q", len(idx), idx[0], got.Len(), got.ValueStr(0))
		}
		got.Release()
	}
}

// TestGatherSparse gathers selections too sparse for the run path from sliced
// arrays of every gatherable type, one a filter's (ascending, no negative
// index) and one with -1s (NULL rows, as an outer join's), and checks each
// row against the source row by Arrow's own accessors.
func TestGatherSparse(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Timestamp_us, &arrow.Decimal128Type{Precision: 15, Scale: 2},
		arrow.BinaryTypes.String,
	}
	var filter, outer []int32
	for i := int32(0); i < 280; i += 3 {
		filter = append(filter, i)
		outer = append(outer, 279-i, -1)
	}
	for _, idx := range [][]int32{filter, outer} {
		if denseRuns(idx) != nil {
			t.Fatal("the selection takes the run path")
		}
		for _, dt := range types {
			full := gatherTestArray(mem, dt)
			src := array.NewSlice(full, 5, 290)
			full.Release()
			got, err := GatherArray(mem, src, idx)
			if err != nil {
				t.Fatalf("%s: %v", dt, err)
			}
			if got.Len() != len(idx) {
				t.Fatalf("%s: %d rows, want %d", dt, got.Len(), len(idx))
			}
			for j, i := range idx {
				switch {
				case i < 0 && !got.IsNull(j):
					t.Fatalf("%s: row %d (from -1) is %s, want NULL", dt, j, got.ValueStr(j))
				case i >= 0 && (got.IsNull(j) != src.IsNull(int(i)) || got.ValueStr(j) != src.ValueStr(int(i))):
					t.Fatalf("%s: row %d is %s, source row %d is %s", dt, j, got.ValueStr(j), i, src.ValueStr(int(i)))
				}
			}
			got.Release()
			src.Release()
		}
	}
}
