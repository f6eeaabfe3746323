package main

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// bids returns a batch of (auction, dateTime) rows, times in seconds.
func bids(t *testing.T, rows ...[2]int64) exec.Batch {
	t.Helper()
	mem := memory.NewGoAllocator()
	ab, tb := array.NewInt64Builder(mem), array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	for _, r := range rows {
		ab.Append(r[0])
		tb.Append(arrow.Timestamp(r[1] * 1_000_000))
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "auction", Type: arrow.PrimitiveTypes.Int64}, {Name: "dateTime", Type: tb.Type()}}, nil)
	return exec.Batch{Rec: array.NewRecordBatch(schema, []arrow.Array{ab.NewArray(), tb.NewArray()}, int64(len(rows)))}
}

// TestHotItems: by hand, with windows of 10 s sliding by 2 s, bids on auction 1
// at 0 s and 1 s and on auction 2 at 3 s, split over two workers: the windows
// starting at -8 s hold auction 1 twice (1 row); at -6, -4, -2 and 0 s auction 1
// twice and 2 once (auction 1's row each); at 2 s auction 2 once (1 row): 6 rows.
func TestHotItems(t *testing.T) {
	a := &hopCounts{windows: map[int64]map[int64]int64{}}
	b := &hopCounts{windows: map[int64]map[int64]int64{}}
	ctx := context.Background()
	if err := a.Collect(ctx, bids(t, [2]int64{1, 0}, [2]int64{2, 3})); err != nil {
		t.Fatal(err)
	}
	if err := b.Collect(ctx, bids(t, [2]int64{1, 1})); err != nil {
		t.Fatal(err)
	}
	if got := len(a.windows); got != 6 {
		t.Errorf("worker a has %d windows, want 6 (-8 s to 2 s)", got)
	}
	if got := hotItems([]*hopCounts{a, b}); got != 6 {
		t.Errorf("hotItems = %d, want 6", got)
	}
}
