package expr

// Boolean logic with SQL's three values, IS [NOT] NULL / TRUE / FALSE, and the
// conditional forms CASE, COALESCE and NULLIF.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// truth splits a Boolean array into two offset-0 bitmaps: rows known true and
// rows known false (NULL rows are in neither).
func truth(a arrow.Array, mem memory.Allocator) (t, f *memory.Buffer) {
	n := a.Len()
	t, f = newBitmap(mem, n), newBitmap(mem, n)
	if a.NullN() == n {
		return t, f
	}
	vals, off := boolValues(a.(*array.Boolean))
	tb, fb := t.Bytes(), f.Bytes()
	bitutil.CopyBitmap(vals, off, n, tb, 0)
	bitutil.InvertBitmap(vals, off, n, fb, 0)
	if a.NullN() > 0 {
		valid := a.NullBitmapBytes()
		bitutil.BitmapAnd(tb, valid, 0, int64(off), tb, 0, int64(n))
		bitutil.BitmapAnd(fb, valid, 0, int64(off), fb, 0, int64(n))
	}
	return t, f
}

// fromTruth builds a Boolean array from known-true and known-false bitmaps and
// releases them.
func fromTruth(t, f *memory.Buffer, n int, mem memory.Allocator) arrow.Array {
	valid := newBitmap(mem, n)
	bitutil.BitmapOr(t.Bytes(), f.Bytes(), 0, 0, valid.Bytes(), 0, int64(n))
	f.Release()
	nulls := n - bitutil.CountSetBits(valid.Bytes(), 0, n)
	if nulls == 0 {
		valid.Release()
		valid = nil
	}
	return finish(arrow.FixedWidthTypes.Boolean, n, nulls, valid, t)
}

// evalAndOr folds AND or OR over its arguments left to right. An argument is
// needed only on rows the ones before it have not decided (not yet false for
// AND, not yet true for OR), so `x <> 0 AND 10 / x > 1` never divides by zero.
func evalAndOr(c *call) (arrow.Array, error) {
	isAnd := c.e.Func == "and"
	first, err := eval(c.e.Args[0], c.b, c.mem)
	if err != nil {
		return nil, err
	}
	t, f := truth(first, c.mem)
	first.Release()
	// decided holds the rows whose result is settled: f for AND, t for OR.
	for _, arg := range c.e.Args[1:] {
		decided := f
		if !isAnd {
			decided = t
		}
		open := newBitmap(c.mem, c.n)
		bitutil.InvertBitmap(decided.Bytes(), 0, c.n, open.Bytes(), 0)
		next, err := evalWhere(arg, c.b, open.Bytes(), c.mem)
		open.Release()
		if err != nil {
			t.Release()
			f.Release()
			return nil, err
		}
		if next == nil {
			break // every row is decided
		}
		nt, nf := truth(next, c.mem)
		next.Release()
		tb, fb, ntb, nfb := t.Bytes(), f.Bytes(), nt.Bytes(), nf.Bytes()
		if isAnd {
			bitutil.BitmapAnd(tb, ntb, 0, 0, tb, 0, int64(c.n)) // true only if both are
			bitutil.BitmapOr(fb, nfb, 0, 0, fb, 0, int64(c.n))  // false if either is
		} else {
			bitutil.BitmapOr(tb, ntb, 0, 0, tb, 0, int64(c.n))
			bitutil.BitmapAnd(fb, nfb, 0, 0, fb, 0, int64(c.n))
		}
		nt.Release()
		nf.Release()
	}
	return fromTruth(t, f, c.n, c.mem), nil
}

// evalNot negates known values; NOT NULL is NULL.
func evalNot(c *call) (arrow.Array, error) {
	t, f := truth(c.args[0], c.mem)
	return fromTruth(f, t, c.n, c.mem), nil
}

// evalIsBool computes IS [NOT] TRUE / FALSE, which are never NULL.
func evalIsBool(c *call) (arrow.Array, error) {
	t, f := truth(c.args[0], c.mem)
	var out *memory.Buffer
	switch c.e.Func {
	case "is_true":
		out = t
		f.Release()
	case "is_false":
		out = f
		t.Release()
	case "is_not_true":
		out = newBitmap(c.mem, c.n)
		bitutil.InvertBitmap(t.Bytes(), 0, c.n, out.Bytes(), 0)
		t.Release()
		f.Release()
	default: // is_not_false
		out = newBitmap(c.mem, c.n)
		bitutil.InvertBitmap(f.Bytes(), 0, c.n, out.Bytes(), 0)
		t.Release()
		f.Release()
	}
	return finish(arrow.FixedWidthTypes.Boolean, c.n, 0, nil, out), nil
}

// evalIsNull computes IS NULL and IS NOT NULL, which are never NULL.
func evalIsNull(c *call) (arrow.Array, error) {
	a := c.args[0]
	out := newBitmap(c.mem, c.n)
	ob := out.Bytes()
	switch {
	case a.NullN() == 0:
		bitutil.SetBitsTo(ob, 0, int64(c.n), true)
	case a.NullN() == a.Len():
	default:
		bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), c.n, ob, 0)
	}
	if c.e.Func == "is_null" {
		bitutil.InvertBitmap(ob, 0, c.n, ob, 0)
	}
	return finish(arrow.FixedWidthTypes.Boolean, c.n, 0, nil, out), nil
}

// evalCase computes searched CASE: args are when1, then1, ..., else. Each WHEN
// is evaluated on the rows no earlier WHEN took, each THEN (and the ELSE) on the
// rows it supplies, so a branch's errors only surface for rows that use it.
func evalCase(c *call) (arrow.Array, error) {
	args := c.e.Args
	nb := len(args) / 2 // number of WHEN branches; the ELSE is branch nb
	which := make([]int32, c.n)
	for i := range which {
		which[i] = int32(nb)
	}
	open := newBitmap(c.mem, c.n) // rows no WHEN has taken yet
	defer open.Release()
	ob := open.Bytes()
	bitutil.SetBitsTo(ob, 0, int64(c.n), true)
	taken := make([]*memory.Buffer, nb+1) // rows each branch supplies
	defer func() {
		for _, b := range taken {
			if b != nil {
				b.Release()
			}
		}
	}()
	for k := range nb {
		w, err := evalWhere(args[2*k], c.b, ob, c.mem)
		if err != nil {
			return nil, err
		}
		if w == nil {
			break
		}
		t, f := truth(w, c.mem)
		w.Release()
		f.Release()
		tb := t.Bytes()
		bitutil.BitmapAnd(tb, ob, 0, 0, tb, 0, int64(c.n))
		bitutil.BitmapAndNot(ob, tb, 0, 0, ob, 0, int64(c.n))
		for i := range c.n {
			if bitutil.BitIsSet(tb, i) {
				which[i] = int32(k)
			}
		}
		taken[k] = t
	}
	taken[nb] = open
	open.Retain()

	vals := make([]arrow.Array, nb+1)
	defer releaseAll(vals)
	for k := range nb + 1 {
		if taken[k] == nil {
			continue
		}
		e := args[len(args)-1]
		if k < nb {
			e = args[2*k+1]
		}
		v, err := evalWhere(e, c.b, taken[k].Bytes(), c.mem)
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	return choose(c.e.Type.Arrow(), vals, which, identity(c.n), c.mem)
}

// evalCoalesce returns, per row, the first argument that is not NULL, evaluating
// each argument only on rows the earlier ones left NULL.
func evalCoalesce(c *call) (arrow.Array, error) {
	which := make([]int32, c.n)
	for i := range which {
		which[i] = -1
	}
	open := newBitmap(c.mem, c.n)
	defer open.Release()
	ob := open.Bytes()
	bitutil.SetBitsTo(ob, 0, int64(c.n), true)
	vals := make([]arrow.Array, len(c.e.Args))
	defer releaseAll(vals)
	for k, e := range c.e.Args {
		v, err := evalWhere(e, c.b, ob, c.mem)
		if err != nil {
			return nil, err
		}
		if v == nil {
			break
		}
		vals[k] = v
		s := sourceOf(v)
		if s.all {
			continue
		}
		for i := range c.n {
			if bitutil.BitIsSet(ob, i) && (s.valid == nil || bitutil.BitIsSet(s.valid, s.voff+i)) {
				which[i] = int32(k)
				bitutil.ClearBit(ob, i)
			}
		}
	}
	return choose(c.e.Type.Arrow(), vals, which, identity(c.n), c.mem)
}

// evalNullif returns NULL where a = b, else a.
func evalNullif(c *call) (arrow.Array, error) {
	a, b := c.args[0], c.args[1]
	eq := newBitmap(c.mem, c.n)
	defer eq.Release()
	if err := compareInto(c.argType(0), cmpMask("="), a, b, c.n, eq.Bytes()); err != nil {
		return nil, err
	}
	valid, _ := validity(c.mem, c.n, a, b)
	row := identity(c.n)
	for i := range row {
		if bitutil.BitIsSet(eq.Bytes(), i) && validAt(valid, i) {
			row[i] = -1
		}
	}
	if valid != nil {
		valid.Release()
	}
	return take(a, row, c.mem)
}

// evalSingleRow is $single_row(rows, v): v, or ErrSubqueryRows where rows is
// above 1.
func evalSingleRow(c *call) (arrow.Array, error) {
	rows, ok := c.args[0].(*array.Int64)
	if ok {
		for i, n := range rows.Int64Values() {
			if n > 1 && rows.IsValid(i) {
				return nil, ErrSubqueryRows
			}
		}
	}
	v := c.args[1]
	v.Retain()
	return v, nil
}

// identity returns 0, 1, ..., n-1.
func identity(n int) []int32 {
	row := make([]int32, n)
	for i := range row {
		row[i] = int32(i)
	}
	return row
}
