package expr

// Selectors: conjuncts of a filter evaluated straight into a selection
// vector, over every row of a batch or over only the rows the conjuncts
// before kept, reading their columns where they lie (a filter otherwise
// gathers the columns its later conjuncts read once few rows are left).
// Besides Bounds: a comparison of two bigint, date or timestamp columns
// (l_commitdate < l_receiptdate), and a text column equal to one of a few
// literals (l_shipmode IN ('MAIL', 'SHIP'), l_shipinstruct = 'DELIVER IN
// PERSON').

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/types"
)

// Selector is a conjunct that keeps the rows where it is true (false and
// NULL alike drop a row), evaluated into a selection vector. It cannot fail.
type Selector interface {
	// Reads reports whether the selector can read batches of schema s (its
	// columns there of the Arrow types its expression's types stand for).
	Reads(s *arrow.Schema) bool
	// SelectAll appends to sel the rows of rec it keeps, in order.
	SelectAll(rec arrow.RecordBatch, sel []int32) []int32
	// Refine keeps, in place and in order, the rows of sel (rows of rec) it
	// keeps, and returns them.
	Refine(rec arrow.RecordBatch, sel []int32) []int32
}

var (
	_ Selector = (*Bounds)(nil)
	_ Selector = (*columnOrder)(nil)
	_ Selector = (*textIn)(nil)
)

// MatchSelector returns e as a Selector, when it is bounds (MatchBounds), a
// comparison of two columns of one bigint, date or timestamp type, a text
// column = a literal or IN a list of at most smallInList literals (NULL
// items, which can only make the IN NULL, are dropped: a row with NULL is
// dropped anyway), or an OR of arms each a selector or an AND of them (NULL
// and false alike drop a row there too: an OR is true only where some arm
// is). A Selector may hold scratch memory: each evaluates one batch at a
// time.
func MatchSelector(e *Expr) (Selector, bool) {
	if b, ok := MatchBounds(e); ok {
		return b, true
	}
	if a, ok := matchAnyOf(e); ok {
		return a, true
	}
	if e.Kind != KindCall || len(e.Args) < 2 {
		return nil, false
	}
	x := e.Args[0]
	switch e.Func {
	case "=", "<>", "<", "<=", ">", ">=":
		y := e.Args[1]
		if len(e.Args) != 2 || x.Kind != KindColumn || y.Kind != KindColumn || x.Type != y.Type {
			break
		}
		switch x.Type.ID {
		case types.Int64, types.Date, types.Timestamp:
			return &columnOrder{x: x.Col, y: y.Col, o: orderOf(cmpMask(e.Func))}, true
		}
	}
	if x.Kind != KindColumn || x.Type.ID != types.String || (e.Func != "=" && e.Func != "in") {
		return nil, false
	}
	t := &textIn{col: x.Col}
	for _, a := range e.Args[1:] {
		if a.Kind != KindLiteral || (!a.Value.Null && a.Value.Type.ID != types.String) {
			return nil, false
		}
		if !a.Value.Null {
			t.lits = append(t.lits, []byte(a.Value.Str))
		}
	}
	if e.Func == "=" && len(e.Args) != 2 || len(t.lits) > smallInList {
		return nil, false
	}
	return t, true
}

// columnOrder is column x compared with column y (of one 64-bit integer
// type) as o accepts.
type columnOrder struct {
	x, y int
	o    ordering
}

func (c *columnOrder) Reads(s *arrow.Schema) bool {
	return readsInt64(s, c.x) && readsInt64(s, c.y)
}

func (c *columnOrder) SelectAll(rec arrow.RecordBatch, sel []int32) []int32 {
	xa, ya := rec.Column(c.x), rec.Column(c.y)
	xs, ys := int64Values(xa), int64Values(ya)
	start := len(sel)
	sel = slices.Grow(sel, len(xs))
	out := sel[start : start+len(xs)]
	ys = ys[:len(xs)]
	k := 0
	for i, v := range xs {
		out[k] = int32(i)
		k += int(orderBit(v, ys[i], c.o))
	}
	return sel[:start+keepValid2(xa, ya, out[:k])]
}

func (c *columnOrder) Refine(rec arrow.RecordBatch, sel []int32) []int32 {
	xa, ya := rec.Column(c.x), rec.Column(c.y)
	xs, ys := int64Values(xa), int64Values(ya)
	k := 0
	for _, i := range sel {
		sel[k] = i
		k += int(orderBit(xs[i], ys[i], c.o))
	}
	return sel[:keepValid2(xa, ya, sel[:k])]
}

// textIn is a text column equal to one of lits.
type textIn struct {
	col  int
	lits [][]byte
}

func (t *textIn) Reads(s *arrow.Schema) bool {
	return t.col < s.NumFields() && s.Field(t.col).Type.ID() == arrow.STRING
}

func (t *textIn) SelectAll(rec arrow.RecordBatch, sel []int32) []int32 {
	a := rec.Column(t.col)
	n := a.Len()
	start := len(sel)
	sel = slices.Grow(sel, n)
	out := sel[start : start+n]
	for i := range out {
		out[i] = int32(i)
	}
	return sel[:start+len(t.Refine(rec, out))]
}

// Refine compares literals of up to textWords words as masked words loaded
// at the row's start (as equalsLiteral does for one), without a branch or a
// call per row: the row's length, read from the offsets, has to match too.
// One or two literals of a word (l_shipmode IN ('AIR', 'AIR REG') has one
// of 3 bytes and one of 7) and one of more words have loops of their own,
// their words in registers. Rows too near the end of the data buffer, and
// longer literals, take bytes.Equal.
func (t *textIn) Refine(rec arrow.RecordBatch, sel []int32) []int32 {
	a := rec.Column(t.col)
	if len(t.lits) == 0 {
		return sel[:0]
	}
	offs, data := stringData(a.(*array.String))
	var words, masks [smallInList][textWords]uint64
	var lens [smallInList]int32
	nw := 1 // the words to compare: of the longest literal
	for j, l := range t.lits {
		lens[j] = int32(len(l))
		nw = max(nw, (len(l)+7)/8)
		if len(l) > 8*textWords {
			continue
		}
		var pad [8 * textWords]byte
		copy(pad[:], l)
		for w := range textWords {
			words[j][w] = binary.LittleEndian.Uint64(pad[8*w:])
			if rest := len(l) - 8*w; rest > 0 {
				masks[j][w] = ^uint64(0) >> (64 - 8*min(rest, 8))
			}
		}
	}
	m := len(t.lits)
	if nw > 1 {
		nw = textWords // loads all of them, the ones past the literals masked out
	}
	// The rows from sel[fast] on start too near the data's end to load nw
	// words there (sel and the offsets ascend).
	safe := int32(len(data)) - 8*int32(nw)
	fast := len(sel)
	for fast > 0 && offs[sel[fast-1]] > safe {
		fast--
	}
	if nw > textWords {
		fast = 0
	}
	k := 0
	switch {
	case nw == 1 && m == 1:
		l0, w0, m0 := lens[0], words[0][0], masks[0][0]
		for _, i := range sel[:fast] {
			lo, hi := offs[i], offs[i+1]
			w := binary.LittleEndian.Uint64(data[lo:])
			sel[k] = i
			k += int(b2u8(hi-lo == l0) & b2u8(w&m0 == w0))
		}
	case nw == 1 && m == 2:
		l0, w0, m0 := lens[0], words[0][0], masks[0][0]
		l1, w1, m1 := lens[1], words[1][0], masks[1][0]
		for _, i := range sel[:fast] {
			lo, hi := offs[i], offs[i+1]
			w := binary.LittleEndian.Uint64(data[lo:])
			sel[k] = i
			k += int(b2u8(hi-lo == l0)&b2u8(w&m0 == w0) | b2u8(hi-lo == l1)&b2u8(w&m1 == w1))
		}
	case nw == 1:
		for _, i := range sel[:fast] {
			lo, hi := offs[i], offs[i+1]
			w := binary.LittleEndian.Uint64(data[lo:])
			var eq byte
			for j := range m {
				eq |= b2u8(hi-lo == lens[j]) & b2u8(w&masks[j][0] == words[j][0])
			}
			sel[k] = i
			k += int(eq)
		}
	case m == 1:
		l, ws, ms := lens[0], words[0], masks[0]
		for _, i := range sel[:fast] {
			lo, hi := offs[i], offs[i+1]
			d := data[lo : lo+8*textWords]
			w0, w1, w2 := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:]), binary.LittleEndian.Uint64(d[16:])
			sel[k] = i
			k += int(b2u8(hi-lo == l) & b2u8(w0&ms[0] == ws[0]) & b2u8(w1&ms[1] == ws[1]) & b2u8(w2&ms[2] == ws[2]))
		}
	default:
		for _, i := range sel[:fast] {
			lo, hi := offs[i], offs[i+1]
			d := data[lo : lo+8*textWords]
			w0, w1, w2 := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:]), binary.LittleEndian.Uint64(d[16:])
			var eq byte
			for j := range m {
				eq |= b2u8(hi-lo == lens[j]) & b2u8(w0&masks[j][0] == words[j][0]) &
					b2u8(w1&masks[j][1] == words[j][1]) & b2u8(w2&masks[j][2] == words[j][2])
			}
			sel[k] = i
			k += int(eq)
		}
	}
	for _, i := range sel[fast:] {
		lo, hi := offs[i], offs[i+1]
		var eq byte
		for j := range m {
			eq |= b2u8(hi-lo == lens[j] && bytes.Equal(data[lo:hi], t.lits[j]))
		}
		sel[k] = i
		k += int(eq)
	}
	if a.NullN() > 0 {
		k = keepValid(a, sel[:k])
	}
	return sel[:k]
}

// textWords is the most 8-byte words of a literal textIn compares inline
// (TPC-H's longest, l_shipinstruct's 'DELIVER IN PERSON', takes three).
const textWords = 3

// readsInt64 reports whether column c of s holds 64-bit integers.
func readsInt64(s *arrow.Schema, c int) bool {
	if c >= s.NumFields() {
		return false
	}
	id := s.Field(c).Type.ID()
	return id == arrow.INT64 || id == arrow.TIMESTAMP
}

// keepValid2 keeps, in place, the rows of sel where neither a nor b is NULL,
// and returns how many.
func keepValid2(a, b arrow.Array, sel []int32) int {
	k := len(sel)
	if a.NullN() > 0 {
		k = keepValid(a, sel[:k])
	}
	if b.NullN() > 0 {
		k = keepValid(b, sel[:k])
	}
	return k
}

// keepValid keeps, in place, the rows of sel where a is not NULL, and
// returns how many.
func keepValid(a arrow.Array, sel []int32) int {
	valid, off := a.NullBitmapBytes(), a.Data().Offset()
	k := 0
	for _, i := range sel {
		sel[k] = i
		if bitutil.BitIsSet(valid, off+int(i)) {
			k++
		}
	}
	return k
}
