package expr

// Bounds: a conjunct that holds a column of a bigint, date, timestamp or
// decimal type within constants (l_quantity < 24, l_shipdate >= DATE
// '1994-01-01' AND l_shipdate < DATE '1995-01-01'), evaluated straight into
// a selection vector: over every row of a batch, or over only the rows an
// earlier conjunct kept, reading their values where they lie instead of
// gathering them first (TPC-H q6's filter spent a third of its time
// gathering the decimals its later conjuncts read).

import (
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/types"
)

// Bounds is Col within lo and hi, both inclusive: a value v is within them
// when v - lo, taken as an unsigned number (of 64 bits, or 128 for
// decimals), is at most hi - lo; a value below lo wraps around to more than
// that. NULL is not within any bounds.
type Bounds struct {
	Col   int  // the column's position in the batch
	dec   bool // 128-bit decimals; else 64-bit integers
	empty bool // no value is within them (x < 5 AND x > 7, x > the greatest bigint)
	// lo and width = hi - lo: of integers the low words alone.
	loLo, loHi       uint64
	widthLo, widthHi uint64
}

// MatchBounds returns the bounds that e states when e is a comparison (=,
// <, <=, >, >=) of a column of a bigint, date, timestamp or decimal type
// with a non-NULL literal (as bound takes them: a date cast to a timestamp
// counts as the date), or an AND of such comparisons of one column; ok is
// false otherwise.
func MatchBounds(e *Expr) (b *Bounds, ok bool) {
	conds := []*Expr{e}
	if e.Kind == KindCall && e.Func == "and" {
		conds = e.Args
	}
	var col *Expr
	lo, hi := int128{hi: math.MinInt64}, int128{lo: math.MaxUint64, hi: math.MaxInt64} // every value
	for _, c := range conds {
		x, v, mask, ok := comparison(c)
		if !ok || x.Kind != KindColumn || (col != nil && !x.Same(col)) {
			return nil, false
		}
		col = x
		var w int128
		if x.Type.ID == types.Decimal {
			d := v.Decimal()
			w = int128{lo: d.LowBits(), hi: d.HighBits()}
		} else {
			w = int128{lo: uint64(v.Int), hi: v.Int >> 63}
		}
		// Integers and decimals' unscaled values alike have no value between
		// w and w+1: x > w is x >= w+1 (for a bigint w + 1 may pass the
		// type's greatest value: the clamp below then leaves the bounds
		// empty).
		switch mask {
		case cmpMask("="):
			lo, hi = maxInt128(lo, w), minInt128(hi, w)
		case cmpMask(">"):
			lo = maxInt128(lo, w.add(1))
		case cmpMask(">="):
			lo = maxInt128(lo, w)
		case cmpMask("<"):
			hi = minInt128(hi, w.add(-1))
		case cmpMask("<="):
			hi = minInt128(hi, w)
		}
	}
	b = &Bounds{Col: col.Col, dec: col.Type.ID == types.Decimal}
	if !b.dec {
		// The 64-bit integers' own extremes, and bounds past them, clamp to
		// them: x > MaxInt64 keeps nothing, x >= MinInt64 everything.
		lo = maxInt128(lo, int128{lo: 1 << 63, hi: -1})
		hi = minInt128(hi, int128{lo: math.MaxInt64})
	}
	if lo.less(hi) || lo == hi {
		width := hi.sub(lo)
		b.loLo, b.loHi, b.widthLo, b.widthHi = lo.lo, uint64(lo.hi), width.lo, uint64(width.hi)
	} else {
		b.empty = true
	}
	return b, true
}

// comparison returns the expression, literal and mask (cmpMask) of a
// comparison x op c with op one of =, <, <=, >, >= (c op x is x with the
// mirrored op), x of a bigint, timestamp, date or decimal type and c a
// non-NULL literal of a like type (bound says which).
func comparison(e *Expr) (x *Expr, c types.Value, mask uint8, ok bool) {
	if e.Kind == KindCall && e.Func == "=" && len(e.Args) == 2 {
		// bound takes an ordering only: = as <=, then checked the same way.
		le := *e
		le.Func = "<="
		x, c, _, ok = bound(&le)
		return x, c, cmpMask("="), ok
	}
	return bound(e)
}

// Reads reports whether the bounds can read their column in batches of
// schema s: decimals of 128 bits, or 64-bit integers (bigint, timestamp).
func (b *Bounds) Reads(s *arrow.Schema) bool {
	if !b.dec {
		return readsInt64(s, b.Col)
	}
	return b.Col < s.NumFields() && s.Field(b.Col).Type.ID() == arrow.DECIMAL128
}

// SelectAll appends to sel the rows of rec whose column Col is within the
// bounds, in order.
func (b *Bounds) SelectAll(rec arrow.RecordBatch, sel []int32) []int32 {
	a := rec.Column(b.Col)
	n := a.Len()
	if b.empty || n == 0 {
		return sel
	}
	start := len(sel)
	sel = slices.Grow(sel, n)
	out := sel[start : start+n]
	k := 0
	if b.dec {
		xs := a.(*array.Decimal128).Values()
		out = out[:len(xs)]
		if b.widthHi == 0 {
			for i, v := range xs {
				dLo, borrow := bits.Sub64(v.LowBits(), b.loLo, 0)
				dHi, _ := bits.Sub64(uint64(v.HighBits()), b.loHi, borrow)
				out[k] = int32(i)
				k += int(b2u8(dHi == 0) & b2u8(dLo <= b.widthLo))
			}
		} else {
			for i, v := range xs {
				out[k] = int32(i)
				k += int(b.within128(v))
			}
		}
	} else {
		xs := int64Values(a)
		out = out[:len(xs)]
		lo, width := b.loLo, b.widthLo
		for i, v := range xs {
			out[k] = int32(i)
			k += int(b2u8(uint64(v)-lo <= width))
		}
	}
	sel = sel[:start+k]
	if a.NullN() > 0 {
		sel = sel[:start+keepValid(a, sel[start:])]
	}
	return sel
}

// Refine keeps, in place and in order, the rows of sel (rows of rec) whose
// column Col is within the bounds, and returns them.
func (b *Bounds) Refine(rec arrow.RecordBatch, sel []int32) []int32 {
	a := rec.Column(b.Col)
	if b.empty {
		return sel[:0]
	}
	k := 0
	if b.dec {
		xs := a.(*array.Decimal128).Values()
		if b.widthHi == 0 {
			for _, i := range sel {
				v := xs[i]
				dLo, borrow := bits.Sub64(v.LowBits(), b.loLo, 0)
				dHi, _ := bits.Sub64(uint64(v.HighBits()), b.loHi, borrow)
				sel[k] = i
				k += int(b2u8(dHi == 0) & b2u8(dLo <= b.widthLo))
			}
		} else {
			for _, i := range sel {
				sel[k] = i
				k += int(b.within128(xs[i]))
			}
		}
	} else {
		xs := int64Values(a)
		lo, width := b.loLo, b.widthLo
		for _, i := range sel {
			sel[k] = i
			k += int(b2u8(uint64(xs[i])-lo <= width))
		}
	}
	if a.NullN() > 0 {
		k = keepValid(a, sel[:k])
	}
	return sel[:k]
}

// within128 is 1 when v is within the decimal bounds, else 0.
func (b *Bounds) within128(v decimal128.Num) byte {
	dLo, borrow := bits.Sub64(v.LowBits(), b.loLo, 0)
	dHi, _ := bits.Sub64(uint64(v.HighBits()), b.loHi, borrow)
	return b2u8(dHi < b.widthHi) | b2u8(dHi == b.widthHi)&b2u8(dLo <= b.widthLo)
}

// int128 is a two's complement 128-bit integer, for the bounds' arithmetic.
type int128 struct {
	lo uint64
	hi int64
}

func (a int128) less(b int128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// add returns a + d. It cannot overflow here: decimal literals lie within
// ±(10^38 - 1), far inside 128 bits, and bigints are widened to them.
func (a int128) add(d int64) int128 {
	lo, carry := bits.Add64(a.lo, uint64(d), 0)
	return int128{lo: lo, hi: a.hi + d>>63 + int64(carry)}
}

// sub returns a - b, taken as unsigned (a >= b).
func (a int128) sub(b int128) int128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(uint64(a.hi), uint64(b.hi), borrow)
	return int128{lo: lo, hi: int64(hi)}
}

func maxInt128(a, b int128) int128 {
	if a.less(b) {
		return b
	}
	return a
}

func minInt128(a, b int128) int128 {
	if a.less(b) {
		return a
	}
	return b
}
