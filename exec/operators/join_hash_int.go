package operators

import (
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// intIndex indexes a hash join's build side by its one integer key column
// (BIGINT, INTEGER, DATE: TPC-H's and most schemas' keys), without encoding
// the keys into bytes as state.KeyTable does for any key: it maps a key
// straight to the first build row holding it, the others following in the
// join's next chain. Encoding, hashing the bytes and comparing them were most
// of an own-table TPC-H q3's time (KeyTable's findShort, probe and LookupRows:
// 60% of the CPU profile).
//
// Keys that are dense enough (a span of at most denseSpan times the rows, as
// a table's serial keys are, or of at most denseMin) index an array by key
// minus the least key: a lookup is one bounds check and one load. Others go in
// an open-addressing table of keys and first rows, at most half full, with
// linear probing, hashed by a multiply with a random odd seed so that no input
// can be chosen to collide.
type intIndex struct {
	dense bool
	min   int64
	span  uint64  // dense: len(first)
	first []int32 // dense: by key-min; hashed: by slot; -1: none
	keys  []int64 // hashed: each slot's key
	mult  uint64  // hashed: the odd multiplier
	shift uint    // hashed: 64 - log2(len(first))
	mask  uint64  // hashed: len(first)-1
}

const (
	// denseSpan is how many slots per build row a dense index may take:
	// 16 bytes a row at most, less than the row's own columns (orders'
	// keys, a quarter of their span used, filtered by half: 8 slots a row).
	denseSpan = 16
	// denseMin is the span a dense index may take whatever the rows.
	denseMin = 1 << 16
)

// intKeyed reports whether a column of type dt can be indexed by intIndex.
func intKeyed(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT64, arrow.INT32, arrow.DATE32:
		return true
	}
	return false
}

// intKey is the Go types of the columns intKeyed accepts.
type intKey interface{ ~int32 | ~int64 }

// intValues returns col's values (col is of a type intKeyed accepts).
func intValues(col arrow.Array) (i64 []int64, i32 []int32) {
	switch a := col.(type) {
	case *array.Int64:
		return a.Int64Values(), nil
	case *array.Int32:
		return nil, a.Int32Values()
	case *array.Date32:
		v := a.Date32Values()
		return nil, arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(v))
	}
	return nil, nil
}

// buildIntIndex indexes the n rows of key column col, setting next[r] to the
// next row after r with r's key (-1: none); NULL keys are not indexed.
func buildIntIndex(col arrow.Array, next []int32) *intIndex {
	i64, i32 := intValues(col)
	if i64 != nil {
		return buildInts(i64, col, next)
	}
	return buildInts(i32, col, next)
}

func buildInts[T intKey](vals []T, col arrow.Array, next []int32) *intIndex {
	n := len(next)
	vals = vals[:n]
	nulls := col.NullN() > 0
	x := &intIndex{}
	lo, hi, seen := int64(0), int64(0), false
	for r, v := range vals {
		if nulls && col.IsNull(r) {
			continue
		}
		k := int64(v)
		if !seen {
			lo, hi, seen = k, k, true
		}
		lo, hi = min(lo, k), max(hi, k)
	}
	for r := range next {
		next[r] = -1
	}
	if !seen {
		x.dense = true
		return x
	}
	span := uint64(hi-lo) + 1 // wraps to 0 for the whole int64 range
	if span != 0 && (span <= denseMin || span/denseSpan <= uint64(n)) {
		x.dense, x.min, x.span = true, lo, span
		x.first = make([]int32, span)
		for i := range x.first {
			x.first[i] = -1
		}
		for r := n - 1; r >= 0; r-- {
			if nulls && col.IsNull(r) {
				continue
			}
			p := uint64(int64(vals[r]) - lo)
			next[r] = x.first[p]
			x.first[p] = int32(r)
		}
		return x
	}
	size, bits := 1024, uint(10)
	for size < 2*n {
		size, bits = size*2, bits+1
	}
	x.first = make([]int32, size)
	for i := range x.first {
		x.first[i] = -1
	}
	x.keys = make([]int64, size)
	x.mult = maphash.Comparable(maphash.MakeSeed(), 0) | 1
	x.shift, x.mask = 64-bits, uint64(size-1)
	for r := n - 1; r >= 0; r-- {
		if nulls && col.IsNull(r) {
			continue
		}
		k := int64(vals[r])
		p := (uint64(k) * x.mult) >> x.shift
		for x.first[p] >= 0 && x.keys[p] != k {
			p = (p + 1) & x.mask
		}
		x.keys[p] = k
		next[r] = x.first[p]
		x.first[p] = int32(r)
	}
	return x
}

// lookup sets first[i] to the first build row whose key is row i's of col
// (of the build key's type), or -1 when there is none or row i's is NULL.
func (x *intIndex) lookup(col arrow.Array, first []int32) {
	i64, i32 := intValues(col)
	if i64 != nil {
		lookupInts(x, i64, col, first)
		return
	}
	lookupInts(x, i32, col, first)
}

func lookupInts[T intKey](x *intIndex, vals []T, col arrow.Array, out []int32) {
	vals = vals[:len(out)]
	switch {
	case x.first == nil: // no keys
		for i := range out {
			out[i] = -1
		}
	case x.dense:
		idx, lo, span := x.first, x.min, x.span
		for i, v := range vals {
			f := int32(-1)
			if p := uint64(int64(v) - lo); p < span {
				f = idx[p]
			}
			out[i] = f
		}
	default:
		idx, keys, mult, shift, mask := x.first, x.keys, x.mult, x.shift, x.mask
		for i, v := range vals {
			k := int64(v)
			p := (uint64(k) * mult) >> shift
			for {
				f := idx[p]
				if f < 0 || keys[p] == k {
					out[i] = f
					break
				}
				p = (p + 1) & mask
			}
		}
	}
	if col.NullN() > 0 {
		for i := range out {
			if col.IsNull(i) {
				out[i] = -1
			}
		}
	}
}
