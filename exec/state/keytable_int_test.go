package state

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestIntKeyTable checks an integer table against a map of first sightings:
// batches of bigint keys (NULLs, extremes, dense and sparse values, repeats)
// get the ids of their first insertion, FindRows and LookupRows find them
// (NULL a key for one, no match for the other), keys not inserted are not
// found, the keys decode back, and a compacted table keeps the chosen ones.
func TestIntKeyTable(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(5, 6))
	for _, reserve := range []bool{false, true} {
		t.Run(fmt.Sprint("reserve=", reserve), func(t *testing.T) {
			tb := NewIntKeyTable()
			defer tb.Release()
			ids := map[string]uint32{} // "null" or the value
			keyOf := func(c *array.Int64, i int) string {
				if c.IsNull(i) {
					return "null"
				}
				return fmt.Sprint(c.Value(i))
			}
			value := func() int64 {
				switch r.IntN(5) {
				case 0:
					return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 56, 255}[r.IntN(6)]
				case 1:
					return r.Int64() - r.Int64()
				}
				return int64(r.IntN(20000))
			}
			for range 30 {
				n := 1 + r.IntN(4000)
				ib := array.NewInt64Builder(mem)
				for range n {
					if r.IntN(20) == 0 {
						ib.AppendNull()
					} else {
						ib.Append(value())
					}
				}
				col := ib.NewArray().(*array.Int64)
				ib.Release()
				var k RowKeys
				if err := k.Encode([]arrow.Array{col}, nil, n); err != nil {
					t.Fatal(err)
				}
				// Before inserting: FindRows knows exactly the keys seen so far.
				found := make([]int32, n)
				tb.FindRows(&k, found)
				for i := range n {
					want, ok := ids[keyOf(col, i)]
					if !ok && found[i] != -1 || ok && found[i] != int32(want) {
						t.Fatalf("row %d (%s): found %d, want %d (held %v)", i, keyOf(col, i), found[i], want, ok)
					}
				}
				if reserve {
					tb.Reserve(n, k.Bytes())
				}
				gids := make([]uint32, n)
				tb.InsertRows(&k, gids)
				looked := make([]int32, n)
				tb.LookupRows(&k, looked)
				for i := range n {
					key := keyOf(col, i)
					want, ok := ids[key]
					if !ok {
						want = uint32(len(ids))
						ids[key] = want
					}
					if gids[i] != want {
						t.Fatalf("row %d (%s): id %d, want %d", i, key, gids[i], want)
					}
					if lw := int32(want); col.IsNull(i) && looked[i] != -1 || !col.IsNull(i) && looked[i] != lw {
						t.Fatalf("row %d (%s): looked up %d", i, key, looked[i])
					}
				}
				col.Release()
			}
			if tb.Len() != len(ids) {
				t.Fatalf("%d keys, want %d", tb.Len(), len(ids))
			}
			types := []arrow.DataType{arrow.PrimitiveTypes.Int64}
			kc, err := tb.DecodeKeys(mem, types, GroupRange(0, tb.Len()))
			if err != nil {
				t.Fatal(err)
			}
			defer vector.ReleaseArrays(kc)
			for g := range tb.Len() {
				if key := keyOf(kc[0].(*array.Int64), g); ids[key] != uint32(g) {
					t.Fatalf("key %d decodes to %s, which has id %d", g, key, ids[key])
				}
			}
			// Compacted to every third key, backwards: those ids in that order.
			var keep []uint32
			for g := tb.Len() - 1; g >= 0; g -= 3 {
				keep = append(keep, uint32(g))
			}
			c := tb.Compacted(keep)
			defer c.Release()
			got, err := c.DecodeKeys(mem, types, GroupRange(0, c.Len()))
			if err != nil {
				t.Fatal(err)
			}
			defer vector.ReleaseArrays(got)
			want, err := tb.DecodeKeys(mem, types, GroupIDs(keep))
			if err != nil {
				t.Fatal(err)
			}
			defer vector.ReleaseArrays(want)
			if c.Len() != len(keep) || !array.Equal(got[0], want[0]) {
				t.Fatalf("compacted keys %v, want %v", got[0], want[0])
			}
			var k RowKeys
			if err := k.Encode(kc, nil, tb.Len()); err != nil {
				t.Fatal(err)
			}
			cids := make([]int32, tb.Len())
			c.FindRows(&k, cids)
			at := map[uint32]int32{}
			for i, g := range keep {
				at[g] = int32(i)
			}
			for g, id := range cids {
				w, ok := at[uint32(g)]
				if !ok {
					w = -1
				}
				if id != w {
					t.Fatalf("key %d: compacted id %d, want %d", g, id, w)
				}
			}
		})
	}
}

// TestIntKeyTableRuns checks InsertRows on keys that come in runs (the
// previous row's key reused without a probe) against a map of first
// sightings: runs of one value, of NULL, a value after a NULL run of it,
// 0 first in a batch (as the value before the first row would be),
// keys that come back after other runs, in batches longer than a chunk of
// intInsertRows' loads ahead, through many growths of the table.
func TestIntKeyTableRuns(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(11, 12))
	tb := NewIntKeyTable()
	defer tb.Release()
	ids := map[string]uint32{}
	next := int64(0)
	for batch := range 40 {
		n := 1 + r.IntN(3*intChunk+7)
		if batch%5 == 0 {
			n = 5000
		}
		ib := array.NewInt64Builder(mem)
		var keys []string
		for len(keys) < n {
			run := 1 + r.IntN(6)
			var v int64
			null := r.IntN(15) == 0
			switch r.IntN(3) {
			case 0: // a key seen before, maybe long ago, or 0 to start a batch
				if len(keys) == 0 && batch%2 == 1 {
					null = false
					break
				}
				v = r.Int64N(next + 1)
			default:
				next += 1 + r.Int64N(30)
				v = next
			}
			for range min(run, n-len(keys)) {
				if null {
					ib.AppendNull()
					keys = append(keys, "null")
				} else {
					ib.Append(v)
					keys = append(keys, fmt.Sprint(v))
				}
			}
		}
		col := ib.NewArray()
		ib.Release()
		var k RowKeys
		if err := k.Encode([]arrow.Array{col}, nil, n); err != nil {
			t.Fatal(err)
		}
		gids := make([]uint32, n)
		tb.InsertRows(&k, gids)
		for i, key := range keys {
			want, ok := ids[key]
			if !ok {
				want = uint32(len(ids))
				ids[key] = want
			}
			if gids[i] != want {
				t.Fatalf("batch %d row %d (%s): id %d, want %d", batch, i, key, gids[i], want)
			}
		}
		col.Release()
	}
	if tb.Len() != len(ids) {
		t.Fatalf("%d keys in the table, want %d", tb.Len(), len(ids))
	}
}

// TestKeyTableInsertInt64s checks InsertInt64s against a map of first
// sightings, batches of it mixed with InsertRows batches (NULLs among them)
// on one table: values in runs, extremes, 0 first in a batch, values seen
// batches before; and the keys decode back to the values in order of ids.
func TestKeyTableInsertInt64s(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(13, 14))
	tb := NewIntKeyTable()
	defer tb.Release()
	ids := map[string]uint32{}
	var order []string // keys by id
	idOf := func(key string) uint32 {
		id, ok := ids[key]
		if !ok {
			id = uint32(len(ids))
			ids[key] = id
			order = append(order, key)
		}
		return id
	}
	for batch := range 30 {
		n := 1 + r.IntN(3*intChunk+5)
		if batch%4 == 0 {
			n = 4000
		}
		var vals []int64
		for len(vals) < n {
			var v int64
			switch r.IntN(4) {
			case 0:
				v = []int64{math.MinInt64, math.MaxInt64, -1, 1 << 40}[r.IntN(4)]
			case 1:
				if len(vals) == 0 {
					v = 0
				} else {
					v = r.Int64N(5000)
				}
			default:
				v = r.Int64N(200_000)
			}
			for range min(1+r.IntN(5), n-len(vals)) {
				vals = append(vals, v)
			}
		}
		gids := make([]uint32, n)
		if batch%3 == 2 {
			// The same values through InsertRows, with some NULLs.
			ib := array.NewInt64Builder(mem)
			var keys []string
			for _, v := range vals {
				if r.IntN(10) == 0 {
					ib.AppendNull()
					keys = append(keys, "null")
				} else {
					ib.Append(v)
					keys = append(keys, fmt.Sprint(v))
				}
			}
			col := ib.NewArray()
			ib.Release()
			var k RowKeys
			if err := k.Encode([]arrow.Array{col}, nil, n); err != nil {
				t.Fatal(err)
			}
			tb.InsertRows(&k, gids)
			col.Release()
			for i, key := range keys {
				if want := idOf(key); gids[i] != want {
					t.Fatalf("batch %d row %d (%s): InsertRows id %d, want %d", batch, i, key, gids[i], want)
				}
			}
			continue
		}
		tb.InsertInt64s(vals, gids)
		for i, v := range vals {
			if want := idOf(fmt.Sprint(v)); gids[i] != want {
				t.Fatalf("batch %d row %d (%d): id %d, want %d", batch, i, v, gids[i], want)
			}
		}
	}
	cols, err := tb.DecodeKeys(mem, []arrow.DataType{arrow.PrimitiveTypes.Int64}, GroupRange(0, tb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer cols[0].Release()
	c := cols[0].(*array.Int64)
	if c.Len() != len(order) {
		t.Fatalf("%d keys decoded, want %d", c.Len(), len(order))
	}
	for i, key := range order {
		got := "null"
		if c.IsValid(i) {
			got = fmt.Sprint(c.Value(i))
		}
		if got != key {
			t.Fatalf("key %d decodes to %s, want %s", i, got, key)
		}
	}
}
