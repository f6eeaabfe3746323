package expr

// Comparisons and IN. Both sides have one type (the binder casts them to their
// common type). Text compares bytewise, which is PostgreSQL's C collation;
// doubles order NaN above every other value and equal to itself, as PostgreSQL
// does; booleans order false before true.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// cmpMask turns a comparison operator into the set of orderings it accepts:
// bit 0 for less, bit 1 for equal, bit 2 for greater, so that a row's result is
// mask>>(c+1)&1 for c = -1, 0, 1.
func cmpMask(op string) uint8 {
	switch op {
	case "=":
		return 0b010
	case "<>":
		return 0b101
	case "<":
		return 0b001
	case "<=":
		return 0b011
	case ">":
		return 0b100
	case ">=":
		return 0b110
	}
	return 0
}

func evalCompare(c *call) (arrow.Array, error) {
	valid, nulls := validity(c.mem, c.n, c.args...)
	out := newBitmap(c.mem, c.n)
	if err := compareInto(c.argType(0), cmpMask(c.e.Func), c.args[0], c.args[1], c.n, out.Bytes()); err != nil {
		out.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	return finish(arrow.FixedWidthTypes.Boolean, c.n, nulls, valid, out), nil
}

// compareInto sets bit i of out, for i < n, when row i of a and b compare as
// mask accepts. out must start zeroed (a new bitmap); whole bytes of it may be
// written at once. Either side may be a one-row literal (see kernelMode). NULL
// rows get arbitrary bits; callers mask them with validity.
func compareInto(t types.Type, mask uint8, a, b arrow.Array, n int, out []byte) error {
	switch t.ID {
	case types.Int64, types.Timestamp, types.Date:
		compareOrdered(mask, int64Arg(a), int64Arg(b), n, out)
	case types.Float64:
		x, y := float64Arg(a), float64Arg(b)
		for i := range n {
			if mask>>(cmpFloat(x.at(i), y.at(i))+1)&1 != 0 {
				bitutil.SetBit(out, i)
			}
		}
	case types.Decimal:
		compareDecimals(mask, decimalArg(a), decimalArg(b), n, out)
	case types.String:
		x, y := textOf(a), textOf(b)
		if mask == cmpMask("=") || mask == cmpMask("<>") {
			// Equality needs no ordering: lengths differ in most rows.
			want := mask == cmpMask("=")
			if x.m == 0 && y.m != 0 {
				x, y = y, x
			}
			if y.m == 0 && x.m != 0 {
				equalsLiteral(x, y.row(0), n, want, out)
				return nil
			}
			for i := range n {
				if bytes.Equal(x.row(i), y.row(i)) == want {
					bitutil.SetBit(out, i)
				}
			}
			return nil
		}
		for i := range n {
			if mask>>(bytes.Compare(x.row(i), y.row(i))+1)&1 != 0 {
				bitutil.SetBit(out, i)
			}
		}
	case types.Bool:
		xb, xoff := boolValues(a.(*array.Boolean))
		yb, yoff := boolValues(b.(*array.Boolean))
		xm, ym := rowMask(a), rowMask(b)
		for i := range n {
			c := b2i(bitutil.BitIsSet(xb, xoff+i&xm)) - b2i(bitutil.BitIsSet(yb, yoff+i&ym))
			if mask>>(c+1)&1 != 0 {
				bitutil.SetBit(out, i)
			}
		}
	default:
		return errBadType("compare", t)
	}
	return nil
}

// rowMask is -1 for a column and 0 for a one-row literal: row i is i & rowMask.
func rowMask(a arrow.Array) int {
	if a.Len() == 1 {
		return 0
	}
	return -1
}

func compareOrdered[T cmp.Ordered](mask uint8, x, y vals[T], n int, out []byte) {
	switch {
	case y.m == 0 && x.m != 0 && len(x.v) >= n:
		// Column against a literal, the common case (x > 3): the literal is read
		// once and the column walked as a plain slice.
		compareColumnLiteral(orderOf(mask), x.v[:n], y.v[0], out)
		return
	case x.m == 0 && y.m != 0 && len(y.v) >= n:
		// A literal against a column (3 < x): the column against the literal
		// with the orderings swapped.
		compareColumnLiteral(orderOf(swapMask(mask)), y.v[:n], x.v[0], out)
		return
	case x.m != 0 && y.m != 0 && len(x.v) >= n && len(y.v) >= n:
		// Two columns (l_commitdate < l_receiptdate).
		compareColumns(orderOf(mask), x.v[:n], y.v[:n], out)
		return
	}
	o := orderOf(mask)
	for i := range n {
		out[i/8] |= orderBit(x.at(i), y.at(i), o) << (i % 8)
	}
}

// swapMask returns the mask of the comparison with its sides swapped: a < b
// is b > a.
func swapMask(mask uint8) uint8 { return mask&0b010 | mask>>2&1 | mask&1<<2 }

// ordering is a comparison's mask (cmpMask) as e ^ (l&less | g&greater), a
// form that needs no test for equality: less and greater exclude each other,
// and equal is neither. For "<=" (e=1, l=0, g=1) that is 1 ^ greater.
type ordering struct{ e, l, g byte }

func orderOf(mask uint8) ordering {
	lt, eq, gt := mask&1, mask>>1&1, mask>>2&1
	return ordering{e: eq, l: lt ^ eq, g: gt ^ eq}
}

// orderBit returns the bit of a compared with c, without a branch:
// comparisons of a column with a literal go either way at random, and a
// mispredicted branch per row cost more than the comparison. NaN has no
// ordering here: doubles take cmpFloat.
func orderBit[T cmp.Ordered](a, c T, o ordering) byte {
	return o.e ^ (o.l&b2u8(a < c) | o.g&b2u8(a > c))
}

// b2u8 is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2u8(b bool) byte {
	var r byte
	if b {
		r = 1
	}
	return r
}

// compareDecimals is compareOrdered for 128-bit decimals of one scale: eight
// rows to an output byte, without a branch.
func compareDecimals(mask uint8, x, y vals[num], n int, out []byte) {
	if x.m == 0 && y.m != 0 {
		x, y, mask = y, x, swapMask(mask) // the column on the left
	}
	o := orderOf(mask)
	if y.m == 0 && x.m != 0 && len(x.v) >= n {
		// Column against a literal (l_discount >= 0.05).
		c, xs := y.v[0], x.v[:n]
		ch, cl := c.HighBits(), c.LowBits()
		out = out[:(n+7)/8]
		for j := 0; j < n/8; j++ {
			v := (*[8]num)(xs[j*8:])
			var b byte
			for k := 7; k >= 0; k-- { // a constant shift per row
				ah, al := v[k].HighBits(), v[k].LowBits()
				b = b<<1 | (o.e ^ (o.l&decimalLess(ah, al, ch, cl) | o.g&decimalLess(ch, cl, ah, al)))
			}
			out[j] = b
		}
		for i := n / 8 * 8; i < n; i++ {
			ah, al := xs[i].HighBits(), xs[i].LowBits()
			out[i/8] |= (o.e ^ (o.l&decimalLess(ah, al, ch, cl) | o.g&decimalLess(ch, cl, ah, al))) << (i % 8)
		}
		return
	}
	for i := range n {
		a, c := x.at(i), y.at(i)
		ah, al, ch, cl := a.HighBits(), a.LowBits(), c.HighBits(), c.LowBits()
		out[i/8] |= (o.e ^ (o.l&decimalLess(ah, al, ch, cl) | o.g&decimalLess(ch, cl, ah, al))) << (i % 8)
	}
}

// decimalLess is 1 when the decimal (ah, al) is less than (ch, cl): the
// signed high words decide unless equal, then the unsigned low ones.
func decimalLess(ah int64, al uint64, ch int64, cl uint64) byte {
	return b2u8(ah < ch) | b2u8(ah == ch)&b2u8(al < cl)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// evalIn computes x IN (v1, ..., vk) with SQL's NULL rules: true if some vi
// equals x, else NULL if x or some vi is NULL, else false. Literal list items
// are compared without broadcasting them; items that read columns are
// evaluated as arrays.
func evalIn(c *call) (arrow.Array, error) {
	t := c.argType(0)
	x, err := eval(c.e.Args[0], c.b, c.mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	found := newBitmap(c.mem, c.n) // some item equals x
	defer found.Release()
	unknown := newBitmap(c.mem, c.n) // some item is NULL on this row
	defer unknown.Release()
	fb, ub := found.Bytes(), unknown.Bytes()

	var lits []types.Value
	for _, item := range c.e.Args[1:] {
		if item.Kind == KindLiteral {
			if item.Value.Type.Base() != t.Base() && !item.Value.Null { // an integer x among bigints
				return nil, fmt.Errorf("%w: IN list literal %s is not of type %s", ErrBadExpression, FormatValue(item.Value), t)
			}
			if item.Value.Null {
				bitutil.SetBitsTo(ub, 0, int64(c.n), true)
			} else {
				lits = append(lits, item.Value)
			}
			continue
		}
		arr, err := eval(item, c.b, c.mem)
		if err != nil {
			return nil, err
		}
		eq := newBitmap(c.mem, c.n)
		err = compareInto(t, cmpMask("="), x, arr, c.n, eq.Bytes())
		if err == nil {
			orValid(fb, eq.Bytes(), arr)
			orNulls(ub, arr)
		}
		eq.Release()
		arr.Release()
		if err != nil {
			return nil, err
		}
	}
	if len(lits) > 0 {
		if err := inLiterals(t, x, lits, fb, c.mem); err != nil {
			return nil, err
		}
	}
	// Result: valid when x is valid and (found or no item was NULL); true when found.
	valid := newBitmap(c.mem, c.n)
	vb := valid.Bytes()
	xs := sourceOf(x)
	nulls := 0
	for i := range c.n {
		xv := !xs.all && (xs.valid == nil || bitutil.BitIsSet(xs.valid, xs.voff+i))
		if xv && (bitutil.BitIsSet(fb, i) || !bitutil.BitIsSet(ub, i)) {
			bitutil.SetBit(vb, i)
		} else {
			nulls++
		}
	}
	out := newBitmap(c.mem, c.n)
	copy(out.Bytes(), fb)
	return finish(arrow.FixedWidthTypes.Boolean, c.n, nulls, valid, out), nil
}

// orValid sets bits of dst where eq is set and arr is valid.
func orValid(dst, eq []byte, arr arrow.Array) {
	s := sourceOf(arr)
	for i := range arr.Len() {
		if bitutil.BitIsSet(eq, i) && !s.all && (s.valid == nil || bitutil.BitIsSet(s.valid, s.voff+i)) {
			bitutil.SetBit(dst, i)
		}
	}
}

// orNulls sets bits of dst where arr is NULL.
func orNulls(dst []byte, arr arrow.Array) {
	if arr.NullN() == 0 {
		return
	}
	for i := range arr.Len() {
		if arr.IsNull(i) {
			bitutil.SetBit(dst, i)
		}
	}
}

// smallInList is the most items of a text IN list compared one by one
// rather than through a hash set.
const smallInList = 8

// inLiterals sets bit i of found when row i of x equals one of lits (x's NULL
// rows may get arbitrary bits). Bigint, timestamp and text lists go through a
// hash set; the other types compare against each item.
func inLiterals(t types.Type, x arrow.Array, lits []types.Value, found []byte, mem memory.Allocator) error {
	switch t.ID {
	case types.Int64, types.Timestamp, types.Date:
		set := make(map[int64]struct{}, len(lits))
		for _, v := range lits {
			set[v.Int] = struct{}{}
		}
		for i, v := range int64Values(x) {
			if _, ok := set[v]; ok {
				bitutil.SetBit(found, i)
			}
		}
	case types.String:
		if len(lits) <= smallInList {
			// A few items (l_shipmode IN ('MAIL', 'SHIP')): a pass per item,
			// where the lengths, read from the offsets, decide most rows; a
			// map lookup hashed every row.
			xt := textOf(x)
			for _, v := range lits {
				equalsLiteral(xt, []byte(v.Str), x.Len(), true, found)
			}
			return nil
		}
		set := make(map[string]struct{}, len(lits))
		for _, v := range lits {
			set[v.Str] = struct{}{}
		}
		offs, data := stringData(x.(*array.String))
		for i := range len(offs) - 1 {
			if _, ok := set[string(data[offs[i]:offs[i+1]])]; ok {
				bitutil.SetBit(found, i)
			}
		}
	default:
		// Few distinct representations worth hashing: compare against each.
		for _, v := range lits {
			lit, err := ArrayOf(v, 1, mem)
			if err != nil {
				return err
			}
			eq := make([]byte, bitutil.BytesForBits(int64(x.Len())))
			err = compareInto(t, cmpMask("="), x, lit, x.Len(), eq)
			lit.Release()
			if err != nil {
				return err
			}
			for i := range found {
				found[i] |= eq[i]
			}
		}
	}
	return nil
}

func errBadType(what string, t types.Type) error {
	return newError(ErrBadExpression, "expr: %s has no kernel for type %s", what, t)
}

// equalsLiteral sets bit i of out (zeroed) when (row i of column x equals lit)
// == want. The lengths, read from the offsets alone, decide most rows (all of
// them for the common `s <> ”`). A literal of up to 8 bytes (TPC-H's flags
// 'R', 'F', modes 'MAIL') is compared as one masked word loaded at the row's
// start, without a branch or a call per row; rows too near the end of the
// data buffer for an 8-byte load take bytes.Equal.
func equalsLiteral(x textArg, lit []byte, n int, want bool, out []byte) {
	offs, data, l := x.offs[:n+1], x.data, int32(len(lit))
	flip := b2u8(!want)
	if l == 0 || l > 8 {
		for i := range n {
			lo, hi := offs[i], offs[i+1]
			eq := hi-lo == l && (l == 0 || bytes.Equal(data[lo:hi], lit))
			out[i>>3] |= (b2u8(eq) ^ flip) << (i & 7)
		}
		return
	}
	var pad [8]byte
	copy(pad[:], lit)
	word, mask := binary.LittleEndian.Uint64(pad[:]), ^uint64(0)>>(64-8*l)
	safe := int32(len(data)) - 8 // rows starting at or before it load 8 bytes
	for i := range n {
		lo, hi := offs[i], offs[i+1]
		var eq byte
		if lo <= safe {
			eq = b2u8(hi-lo == l) & b2u8(binary.LittleEndian.Uint64(data[lo:])&mask == word)
		} else {
			eq = b2u8(hi-lo == l && bytes.Equal(data[lo:hi], lit))
		}
		out[i>>3] |= (eq ^ flip) << (i & 7)
	}
}

// compareColumnLiteral sets bit i of out (zeroed) when xs[i] compares with c
// as o accepts, eight rows to an output byte.
func compareColumnLiteral[T cmp.Ordered](o ordering, xs []T, c T, out []byte) {
	full := len(xs) / 8
	out = out[:(len(xs)+7)/8]
	for j := 0; j < full; j++ {
		// Spelled out so that every shift is a constant.
		v := (*[8]T)(xs[j*8:])
		out[j] = orderBit(v[0], c, o) | orderBit(v[1], c, o)<<1 | orderBit(v[2], c, o)<<2 |
			orderBit(v[3], c, o)<<3 | orderBit(v[4], c, o)<<4 | orderBit(v[5], c, o)<<5 |
			orderBit(v[6], c, o)<<6 | orderBit(v[7], c, o)<<7
	}
	for i := full * 8; i < len(xs); i++ {
		out[i/8] |= orderBit(xs[i], c, o) << (i % 8)
	}
}

// compareColumns sets bit i of out (zeroed) when xs[i] compares with ys[i] (of
// xs's length) as o accepts, eight rows to an output byte.
func compareColumns[T cmp.Ordered](o ordering, xs, ys []T, out []byte) {
	ys = ys[:len(xs)]
	full := len(xs) / 8
	out = out[:(len(xs)+7)/8]
	for j := 0; j < full; j++ {
		v, w := (*[8]T)(xs[j*8:]), (*[8]T)(ys[j*8:])
		out[j] = orderBit(v[0], w[0], o) | orderBit(v[1], w[1], o)<<1 | orderBit(v[2], w[2], o)<<2 |
			orderBit(v[3], w[3], o)<<3 | orderBit(v[4], w[4], o)<<4 | orderBit(v[5], w[5], o)<<5 |
			orderBit(v[6], w[6], o)<<6 | orderBit(v[7], w[7], o)<<7
	}
	for i := full * 8; i < len(xs); i++ {
		out[i/8] |= orderBit(xs[i], ys[i], o) << (i % 8)
	}
}
