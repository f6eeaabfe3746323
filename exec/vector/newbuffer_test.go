package vector

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNewBufferUnzeroed: from a PoolAllocator, NewBuffer's buffers are n
// bytes, aligned, of a capacity Resize would give, and not cleared; gathers
// into them, round after round over the pool's poisoned buffers, still give
// exactly the rows asked for (each value and NULL checked against the
// source), so GatherArray writes every byte it reads back.
func TestNewBufferUnzeroed(t *testing.T) {
	a := NewPoisoningPoolAllocator()
	for _, n := range []int{1, 63, 4096, 5000, 1 << 16} {
		b := NewBuffer(a, n)
		if b.Len() != n || b.Cap()%64 != 0 || b.Cap() < n || !aligned(b.Bytes()) {
			t.Fatalf("NewBuffer(%d): len %d cap %d aligned %v", n, b.Len(), b.Cap(), aligned(b.Bytes()))
		}
		b.Release()
	}

	rng := rand.New(rand.NewPCG(1, 2))
	const rows = 40000 // bitmaps of 5000 bytes: pooled
	ib, sb, bb := array.NewInt64Builder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator), array.NewBooleanBuilder(memory.DefaultAllocator)
	db := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 15, Scale: 2})
	for i := range rows {
		if i%7 == 3 {
			ib.AppendNull()
			sb.AppendNull()
			bb.AppendNull()
			db.AppendNull()
			continue
		}
		ib.Append(int64(i) * 1_000_003)
		sb.Append(fmt.Sprint("v", i*i))
		bb.Append(i%3 == 0)
		db.Append(decimal128.FromI64(int64(i) - 1500))
	}
	srcs := []arrow.Array{ib.NewArray(), sb.NewArray(), bb.NewArray(), db.NewArray()}
	for _, b := range []array.Builder{ib, sb, bb, db} {
		b.Release()
	}
	defer ReleaseArrays(srcs)
	for round := range 5 {
		idx := make([]int32, rows)
		for j := range idx {
			idx[j] = int32(rng.IntN(rows+1) - 1) // -1: a NULL row
		}
		for _, src := range srcs {
			got, err := GatherArray(a, src, idx)
			if err != nil {
				t.Fatal(err)
			}
			for j, i := range idx {
				wantNull := i < 0 || src.IsNull(int(i))
				if got.IsNull(j) != wantNull || !wantNull && got.ValueStr(j) != src.ValueStr(int(i)) {
					t.Fatalf("round %d, %s row %d (from %d): %q null=%v", round, src.DataType(), j, i, got.ValueStr(j), got.IsNull(j))
				}
			}
			got.Release()
		}
	}
}
