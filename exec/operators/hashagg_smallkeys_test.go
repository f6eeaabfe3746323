package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestHashAggSmallKeys checks GROUP BY a text and a bigint column of few
// values, NULLs among them, against a map of the input: in batches that the
// small-keys path groups throughout, and in ones where a later batch brings
// what it cannot code (a text of 8 bytes, or more values than a column's
// codes), from where the ordinary path must go on with the same groups.
func TestHashAggSmallKeys(t *testing.T) {
	texts := []any{"A", "N", "R", "", "abcdefg", nil}
	flags := []any{"A", "N", "R"}
	for _, tc := range []struct {
		name  string
		texts []any
		// late makes a quarter of the second half's rows' text and number.
		late    func(r *rand.Rand) (any, any)
		wantOff bool
	}{
		{"few values", texts, nil, false},
		{"long text", texts, func(r *rand.Rand) (any, any) { return "ABCDEFGH", int64(r.IntN(3)) }, true},
		{"many values", texts, func(r *rand.Rand) (any, any) { return "A", int64(r.IntN(1000)) }, true},
		// Texts of one byte, none NULL (oneByteCodes), then more of them
		// than a column's codes.
		{"flags", flags, nil, false},
		{"many flags", flags, func(r *rand.Rand) (any, any) { return string(rune(r.IntN(128))) + "", int64(0) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			r := rand.New(rand.NewPCG(3, 4))
			nums := []any{int64(-1), int64(0), int64(1 << 40), nil}
			type row struct {
				a, b any
				x    int64
			}
			var rows []row
			const nrows = 20_000
			for i := range nrows {
				rw := row{tc.texts[r.IntN(len(tc.texts))], nums[r.IntN(len(nums))], r.Int64N(100)}
				if tc.late != nil && i >= nrows/2 && r.IntN(4) == 0 {
					rw.a, rw.b = tc.late(r)
				}
				rows = append(rows, rw)
			}
			type acc struct{ sum, count int64 }
			want := map[string]*acc{}
			for _, rw := range rows {
				k, _ := json.Marshal([]any{rw.a, rw.b})
				if want[string(k)] == nil {
					want[string(k)] = &acc{}
				}
				want[string(k)].sum += rw.x
				want[string(k)].count++
			}
			in := types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.Int64Type}, {Name: "x", Type: types.Int64Type}}
			var batches []exec.Batch
			for lo := 0; lo < len(rows); lo += 1000 {
				var js []string
				for _, rw := range rows[lo:min(lo+1000, len(rows))] {
					b, _ := json.Marshal(map[string]any{"a": rw.a, "b": rw.b, "x": rw.x})
					js = append(js, string(b))
				}
				batches = append(batches, exec.Batch{Rec: testkit.Record(t, mem, in, "["+strings.Join(js, ",")+"]")})
			}
			defer testkit.Release(batches)

			aggs := []AggSpec{{Func: "sum", Arg: 2, Type: types.Int64Type}, {Func: "count", Arg: -1, Type: types.Int64Type}}
			out := types.Schema{in[0], in[1], {Name: "s", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}}
			op := opTestNew(t, "hash_agg", HashAggConfig{GroupBy: []int{0, 1}, Aggs: aggs}, out)
			ctx := context.Background()
			if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				if err := op.ProcessBatch(ctx, 0, b, nil); err != nil {
					t.Fatal(err)
				}
			}
			if off := op.(*hashAggOp).small.off; off != tc.wantOff {
				t.Errorf("small keys off = %v, want %v", off, tc.wantOff)
			}
			c := &testkit.Collector{T: t}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
				t.Fatal(err)
			}
			if err := op.Close(ctx); err != nil {
				t.Fatal(err)
			}
			var wantRows []string
			for k, s := range want {
				var key []any
				json.Unmarshal([]byte(k), &key)
				b, _ := json.Marshal(append(key, s.sum, s.count))
				wantRows = append(wantRows, string(b))
			}
			sort.Strings(wantRows)
			testkit.Equal(t, fmt.Sprintf("%d groups", len(wantRows)), c.Sorted(), wantRows)
		})
	}
}

// BenchmarkHashAggSmallKeys is TPC-H q1's grouping: GROUP BY two texts of one
// letter (3 and 2 values, 4 groups) and a count, over 1M rows, by the
// small-keys path and by the ordinary one (encoded keys).
func BenchmarkHashAggSmallKeys(b *testing.B) {
	mem := vector.NewPoolAllocator()
	in := types.Schema{{Name: "f", Type: types.StringType}, {Name: "s", Type: types.StringType}}
	var batches []exec.Batch
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 / vector.OutBatchRows {
		fb, sb := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
		for range vector.OutBatchRows {
			fb.Append([]string{"A", "N", "R"}[r.IntN(3)])
			sb.Append([]string{"F", "O"}[r.IntN(2)])
		}
		f, s := fb.NewArray(), sb.NewArray()
		batches = append(batches, exec.Batch{Rec: array.NewRecordBatch(in.Arrow(), []arrow.Array{f, s}, int64(f.Len()))})
		f.Release()
		s.Release()
		fb.Release()
		sb.Release()
	}
	defer testkit.Release(batches)
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}
	out := types.Schema{in[0], in[1], {Name: "n", Type: types.Int64Type}}
	ctx := context.Background()
	for _, small := range []bool{true, false} {
		b.Run(fmt.Sprintf("small=%v", small), func(b *testing.B) {
			for b.Loop() {
				op := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0, 1}, Aggs: aggs}, out)
				op.(*hashAggOp).small.off = !small
				if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
					b.Fatal(err)
				}
				for _, bt := range batches {
					if err := op.ProcessBatch(ctx, 0, bt, nil); err != nil {
						b.Fatal(err)
					}
				}
				op.Close(ctx)
			}
		})
	}
}
