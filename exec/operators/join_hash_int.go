package operators

import (
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/vector"
)

// intIndex indexes a hash join's build side by its integer key columns
// (BIGINT, INTEGER, DATE: TPC-H's and most schemas' keys), without encoding
// the keys into bytes as state.KeyTable does for any key: it maps a key
// straight to the first build row holding it, the others following in the
// join's next chain. Encoding, hashing the bytes and comparing them were most
// of an own-table TPC-H q3's time (KeyTable's findShort, probe and LookupRows:
// 60% of the CPU profile).
//
// Several key columns are packed into one value when their build side's
// ranges fit in 63 bits together (partsupp's part and supplier, a customer
// and its nation): column c's value minus its least, shifted left by the
// bits of the columns after it; a probe row with a value outside a column's
// range matches nothing.
//
// Keys that are dense enough (a span of at most denseSpan times the rows, as
// a table's serial keys are, or of at most denseMin) index an array by key
// minus the least key: a lookup is one bounds check and one load. Others go in
// an open-addressing table of keys and first rows, at most half full, with
// linear probing, hashed by a multiply with a random odd seed so that no input
// can be chosen to collide. When a bitmap of the keys present, by key minus
// the least, takes no more memory than the table (12 bytes a slot) or at most
// bitmapMin bits, it answers a lookup of a key the build side lacks without
// the table: a probe side in key order (lineitem by order, probing orders of
// one customer segment) reads the bitmap in order, where the hash sends each
// lookup to a slot anywhere in a table bigger than the cache; and a key span
// past denseSpan times the rows has most keys absent, whose lookups read a
// bitmap no bigger than the table, once, instead of the table's slots.
type intIndex struct {
	// packed: more than one key column, each from lo[c] to hi[c], shifted
	// left by colShift[c].
	packed   bool
	lo, hi   []int64
	colShift []uint
	dense    bool
	min      int64
	span     uint64   // dense: len(first); hashed with present: the bitmap's bits
	present  []uint64 // hashed: bit key-min set for each key present; nil: none
	first    []int32  // dense: by key-min; hashed: by slot; -1: none
	keys     []int64  // hashed: each slot's key
	mult     uint64   // hashed: the odd multiplier
	shift    uint     // hashed: 64 - log2(len(first))
	mask     uint64   // hashed: len(first)-1
}

const (
	// denseSpan is how many slots per build row a dense index may take:
	// 16 bytes a row at most, less than the row's own columns (orders'
	// keys, a quarter of their span used, filtered by half: 8 slots a row).
	denseSpan = 16
	// denseMin is the span a dense index may take whatever the rows.
	denseMin = 1 << 16
	// bitmapMin is the span a hashed index's bitmap may take whatever the
	// rows: 256 KiB, within a core's second-level cache. A few build keys
	// over a wide span (TPC-H q17's 200 parts of 200 thousand, probed by
	// every lineitem row) then answer most lookups from the bitmap: in the
	// table, a key it lacks costs a slot load and a branch that goes either
	// way, or a run of slots to the next empty one (5 and 9 ns a lookup for
	// 200 and 1300 keys, against 2).
	bitmapMin = 1 << 21
)

// allIntKeyed reports whether key columns cols can be indexed by intIndex.
func allIntKeyed(cols []arrow.Array) bool {
	for _, c := range cols {
		switch c.DataType().ID() {
		case arrow.INT64, arrow.INT32, arrow.DATE32:
		default:
			return false
		}
	}
	return len(cols) > 0
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

// buildIntIndex indexes the n rows of key columns cols, setting next[r] to
// the next row after r with r's key (-1: none); keys with a NULL are not
// indexed. It returns nil when the columns cannot be packed into one value.
func buildIntIndex(cols []arrow.Array, next []int32) *intIndex {
	if len(cols) == 1 {
		i64, i32 := intValues(cols[0])
		if i64 != nil {
			return buildInts(&intIndex{}, i64, cols[0], nil, next)
		}
		return buildInts(&intIndex{}, i32, cols[0], nil, next)
	}
	n := len(next)
	x := &intIndex{packed: true, lo: make([]int64, len(cols)), hi: make([]int64, len(cols)), colShift: make([]uint, len(cols))}
	null := make([]bool, n)
	bits := uint(0)
	for c := len(cols) - 1; c >= 0; c-- {
		lo, hi, ok := intRange(cols[c])
		if !ok {
			// Every key has a NULL: nothing is indexed.
			return buildInts(&intIndex{}, []int64(nil), nil, nil, next)
		}
		w := uint(0)
		for w < 63 && uint64(hi-lo)>>w != 0 {
			w++
		}
		if hi-lo < 0 || bits+w > 63 { // a span past int64's, or too many bits
			return nil
		}
		x.lo[c], x.hi[c], x.colShift[c] = lo, hi, bits
		bits += w
	}
	packed := make([]int64, n)
	for c, col := range cols {
		x.pack(c, col, packed, null)
	}
	return buildInts(x, packed, nil, null, next)
}

// intRange returns the least and greatest non-NULL values of col, and
// whether it has one.
func intRange(col arrow.Array) (lo, hi int64, ok bool) {
	i64, i32 := intValues(col)
	if i64 != nil {
		return valueRange(i64, col)
	}
	return valueRange(i32, col)
}

func valueRange[T intKey](vals []T, col arrow.Array) (lo, hi int64, ok bool) {
	nulls := col.NullN() > 0
	for r, v := range vals[:col.Len()] {
		if nulls && col.IsNull(r) {
			continue
		}
		k := int64(v)
		if !ok {
			lo, hi, ok = k, k, true
		}
		lo, hi = min(lo, k), max(hi, k)
	}
	return lo, hi, ok
}

// pack adds key column c's part of each row's packed value to packed
// (setting it, for the first column), and marks in null the rows whose value
// is NULL or outside the column's build range.
func (x *intIndex) pack(c int, col arrow.Array, packed []int64, null []bool) {
	i64, i32 := intValues(col)
	if i64 != nil {
		packInts(x, c, i64, col, packed, null)
	} else {
		packInts(x, c, i32, col, packed, null)
	}
}

func packInts[T intKey](x *intIndex, c int, vals []T, col arrow.Array, packed []int64, null []bool) {
	first := c == 0
	nulls := col.NullN() > 0
	vals = vals[:len(packed)]
	lo, hi, shift := x.lo[c], x.hi[c], x.colShift[c]
	for r, v := range vals {
		k := int64(v)
		out := k < lo || k > hi || nulls && col.IsNull(r)
		if first {
			packed[r], null[r] = 0, out
		} else if out {
			null[r] = true
		}
		if !out {
			packed[r] |= (k - lo) << shift
		}
	}
}

func buildInts[T intKey](x *intIndex, vals []T, col arrow.Array, mask []bool, next []int32) *intIndex {
	n := len(next)
	if len(vals) < n {
		vals = nil // no key column: every key NULL
	} else {
		vals = vals[:n]
	}
	colNulls := col != nil && col.NullN() > 0
	isNull := func(r int) bool { return vals == nil || colNulls && col.IsNull(r) || mask != nil && mask[r] }
	nulls := colNulls || mask != nil || vals == nil
	lo, hi, seen := int64(0), int64(0), false
	for r, v := range vals {
		if nulls && isNull(r) {
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
			if nulls && isNull(r) {
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
	if span != 0 && (span <= bitmapMin || span/8 <= uint64(size)*12) {
		x.min, x.span = lo, span
		x.present = make([]uint64, (span+63)/64)
	}
	for r := n - 1; r >= 0; r-- {
		if nulls && isNull(r) {
			continue
		}
		k := int64(vals[r])
		if x.present != nil {
			p := uint64(k - lo)
			x.present[p>>6] |= 1 << (p & 63)
		}
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

// lookup sets first[i] to the first build row whose key is row i's of cols
// (of the build keys' types), or -1 when there is none or row i's has a NULL.
// packed and null are scratch for a packed index, kept by the caller.
func (x *intIndex) lookup(cols []arrow.Array, first []int32, packed *[]int64, null *[]bool) {
	if x.packed {
		n := len(first)
		*packed, *null = vector.GrowSlice(*packed, n), vector.GrowSlice(*null, n)
		for c, col := range cols {
			x.pack(c, col, *packed, *null)
		}
		lookupInts(x, *packed, nil, *null, first)
		for i, nl := range *null {
			if nl {
				first[i] = -1
			}
		}
		return
	}
	i64, i32 := intValues(cols[0])
	if i64 != nil {
		lookupInts(x, i64, cols[0], nil, first)
		return
	}
	lookupInts(x, i32, cols[0], nil, first)
}

// find returns the first row of hashed index x's key k (-1: none).
func (x *intIndex) find(k int64) int32 {
	p := (uint64(k) * x.mult) >> x.shift
	for {
		f := x.first[p]
		if f < 0 || x.keys[p] == k {
			return f
		}
		p = (p + 1) & x.mask
	}
}

func lookupInts[T intKey](x *intIndex, vals []T, col arrow.Array, _ []bool, out []int32) {
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
	case x.present != nil:
		// Most lookups of a bitmap's keys miss: the bitmap answers them.
		present, lo, span := x.present, x.min, x.span
		for i, v := range vals {
			out[i] = -1
			if b := uint64(int64(v) - lo); b < span && present[b>>6]&(1<<(b&63)) != 0 {
				out[i] = x.find(int64(v))
			}
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
	if col != nil && col.NullN() > 0 {
		for i := range out {
			if col.IsNull(i) {
				out[i] = -1
			}
		}
	}
}
