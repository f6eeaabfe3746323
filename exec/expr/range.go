package expr

// Ranges: two conjuncts that bound one expression from below and above
// (l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'),
// evaluated as one pass over the expression's values.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Range is X within Lo and Hi, each bound inclusive or not: the AND of the
// two comparisons MatchRange found.
type Range struct {
	X              *Expr
	Lo, Hi         types.Value
	loMask, hiMask uint8 // cmpMask of X against Lo and against Hi
}

// MatchRange returns the range a AND b make when one is a lower bound (x > c
// or x >= c) and the other an upper bound (x < c or x <= c) of the same
// expression of a bigint, timestamp, date or decimal type, by non-NULL
// literals; ok is false otherwise. A date cast to a timestamp counts as the
// date (both are the microseconds of the same instant), so that the date
// arithmetic's l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR bounds
// l_shipdate too.
func MatchRange(a, b *Expr) (r *Range, ok bool) {
	xa, ca, ma, oka := bound(a)
	xb, cb, mb, okb := bound(b)
	if !oka || !okb || !xa.Same(xb) {
		return nil, false
	}
	if ma&0b100 == 0 { // a is the upper bound
		xa, ca, ma, cb, mb = xb, cb, mb, ca, ma
	}
	if ma&0b100 == 0 || mb&0b001 == 0 {
		return nil, false // not one bound of each side
	}
	return &Range{X: xa, Lo: ca, Hi: cb, loMask: ma, hiMask: mb}, true
}

// bound returns the expression, literal and mask of a comparison x op c with
// op one of <, <=, >, >= (c op x is x with the mirrored op).
func bound(e *Expr) (x *Expr, c types.Value, mask uint8, ok bool) {
	if e.Kind != KindCall || len(e.Args) != 2 {
		return nil, c, 0, false
	}
	mask = cmpMask(e.Func)
	if mask != cmpMask("<") && mask != cmpMask("<=") && mask != cmpMask(">") && mask != cmpMask(">=") {
		return nil, c, 0, false
	}
	x, l := e.Args[0], e.Args[1]
	if x.Kind == KindLiteral {
		x, l, mask = l, x, swapMask(mask)
	}
	if l.Kind != KindLiteral || l.Value.Null || x.Kind == KindLiteral {
		return nil, c, 0, false
	}
	if x.Kind == KindCast && x.Type.ID == types.Timestamp && x.Args[0].Type.ID == types.Date {
		x = x.Args[0]
	}
	switch x.Type.ID {
	case types.Int64, types.Timestamp, types.Date:
		if l.Value.Type.ID != types.Int64 && l.Value.Type.ID != types.Timestamp && l.Value.Type.ID != types.Date {
			return nil, c, 0, false
		}
	case types.Decimal:
		if l.Value.Type.ID != types.Decimal || l.Value.Type.Scale != x.Type.Scale {
			return nil, c, 0, false
		}
	default:
		return nil, c, 0, false
	}
	return x, l.Value, mask, true
}

// Eval returns the range's truth over b: a boolean array, NULL where X is.
func (r *Range) Eval(b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	x, err := Eval(r.X, b, mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	n := x.Len()
	out := newBitmap(mem, n)
	bits := out.Bytes()
	lo, hi := orderOf(r.loMask), orderOf(r.hiMask)
	if r.X.Type.ID == types.Decimal {
		xs := x.(*array.Decimal128).Values()
		l, h := r.Lo.Decimal(), r.Hi.Decimal()
		lh, ll, hh, hl := l.HighBits(), l.LowBits(), h.HighBits(), h.LowBits()
		for i, v := range xs {
			vh, vl := v.HighBits(), v.LowBits()
			in := (lo.e ^ (lo.l&decimalLess(vh, vl, lh, ll) | lo.g&decimalLess(lh, ll, vh, vl))) &
				(hi.e ^ (hi.l&decimalLess(vh, vl, hh, hl) | hi.g&decimalLess(hh, hl, vh, vl)))
			bits[i/8] |= in << (i % 8)
		}
	} else {
		xs := int64Values(x)
		l, h := r.Lo.Int, r.Hi.Int
		full := n / 8
		for j := 0; j < full; j++ {
			v := (*[8]int64)(xs[j*8:])
			var by byte
			for k := 7; k >= 0; k-- { // a constant shift per row
				by = by<<1 | orderBit(v[k], l, lo)&orderBit(v[k], h, hi)
			}
			bits[j] = by
		}
		for i := full * 8; i < n; i++ {
			bits[i/8] |= (orderBit(xs[i], l, lo) & orderBit(xs[i], h, hi)) << (i % 8)
		}
	}
	valid, nulls := validity(mem, n, x)
	return finish(arrow.FixedWidthTypes.Boolean, n, nulls, valid, out), nil
}
