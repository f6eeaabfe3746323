package operators

import (
	"cmp"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rangeFrame finds the bounds of a RANGE frame with offsets (WindowFrame):
// by binary search over the current row's partition, sorted on the window's
// first order key, of which RangeKey is a copy at the bounds' type.
type rangeFrame struct {
	key        arrow.Array
	desc       bool
	nullsFirst bool
	start, end func(q, p int32) int // RangeKey of row q against row p's bound
}

// prepareRange readies the range bounds of frame f, once per frame.
func (w *windowRun) prepareRange(f WindowFrame) error {
	if f.Rows || !f.StartOffset && !f.EndOffset {
		return nil
	}
	if _, ok := w.ranges[f]; ok {
		return nil
	}
	if len(w.o.cfg.Order) != 1 {
		return fmt.Errorf("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	cols := int(w.rec.NumCols())
	for _, c := range []int{f.RangeKey, f.StartBound, f.EndBound} {
		if c < 0 || c >= cols {
			return fmt.Errorf("RANGE frame column %d out of range (%d columns)", c, cols)
		}
	}
	order := w.o.cfg.Order[0]
	r := &rangeFrame{key: w.rec.Column(f.RangeKey), desc: order.Desc, nullsFirst: order.NullsFirst}
	var err error
	if f.StartOffset {
		if r.start, err = crossComparator(r.key, w.rec.Column(f.StartBound)); err != nil {
			return err
		}
	}
	if f.EndOffset {
		if r.end, err = crossComparator(r.key, w.rec.Column(f.EndBound)); err != nil {
			return err
		}
	}
	if w.ranges == nil {
		w.ranges = map[WindowFrame]*rangeFrame{}
	}
	w.ranges[f] = r
	return nil
}

// bound returns the first position q of [ps, pe) past which rows of the
// partition compare, in the window's order, above row p's bound (or at or
// above it, with inclusive false): a frame's start with inclusive false, its
// end with inclusive true. Rows whose key is NULL sort at the end NULLS FIRST
// or LAST puts them; a row whose own key is NULL has its peers' bounds.
func (r *rangeFrame) bound(w *windowRun, c func(q, p int32) int, p, ps, pe int, inclusive bool) int {
	cur := w.perm[p]
	if r.key.IsNull(int(cur)) {
		if inclusive {
			return w.peerEnd[p]
		}
		return w.peerStart[p]
	}
	return ps + sort.Search(pe-ps, func(i int) bool {
		q := w.perm[ps+i]
		var d int
		switch {
		case r.key.IsNull(int(q)) && r.nullsFirst:
			d = -1
		case r.key.IsNull(int(q)):
			d = 1
		default:
			d = c(q, cur)
			if r.desc {
				d = -d
			}
		}
		if inclusive {
			return d > 0
		}
		return d >= 0
	})
}

// crossComparator compares a's row i with b's row j, two arrays of one type,
// neither value NULL.
func crossComparator(a, b arrow.Array) (func(i, j int32) int, error) {
	if !arrow.TypeEqual(a.DataType(), b.DataType()) {
		return nil, fmt.Errorf("RANGE frame: key of type %s, bounds of type %s", a.DataType(), b.DataType())
	}
	switch x := a.(type) {
	case *array.Int64:
		u, v := x.Int64Values(), b.(*array.Int64).Int64Values()
		return func(i, j int32) int { return cmp.Compare(u[i], v[j]) }, nil
	case *array.Timestamp:
		u, v := x.TimestampValues(), b.(*array.Timestamp).TimestampValues()
		return func(i, j int32) int { return cmp.Compare(u[i], v[j]) }, nil
	case *array.Float64:
		u, v := x.Float64Values(), b.(*array.Float64).Float64Values()
		return func(i, j int32) int { return cmp.Compare(u[i], v[j]) }, nil
	case *array.Decimal128:
		u, v := x.Values(), b.(*array.Decimal128).Values()
		return func(i, j int32) int { return u[i].Cmp(v[j]) }, nil
	}
	return nil, fmt.Errorf("RANGE frame: cannot compare %s", a.DataType())
}
