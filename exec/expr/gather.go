package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// source is an array's buffers, read directly by choose.
type source struct {
	valid []byte // validity bitmap, nil when the array has no NULL
	voff  int    // bit offset of row 0 in valid
	all   bool   // every row is NULL (or there is no array)
	vals  []byte // fixed-width values or Boolean bits, from the buffer's start
	off   int    // index of row 0 in vals
	offs  []int32
	data  []byte
}

func sourceOf(a arrow.Array) source {
	if a == nil {
		return source{all: true}
	}
	off := a.Data().Offset()
	s := source{voff: off, off: off, all: a.NullN() == a.Len()}
	if a.NullN() > 0 {
		s.valid = a.NullBitmapBytes()
	}
	if str, ok := a.(*array.String); ok {
		s.offs, s.data = stringData(str)
		s.off = 0 // ValueOffsets is already sliced at the array's offset
		return s
	}
	if bufs := a.Data().Buffers(); len(bufs) > 1 && bufs[1] != nil {
		s.vals = bufs[1].Bytes()
	}
	return s
}

// choose builds an array of type dt whose row i is row row[i] of srcs[which[i]]
// (which nil means source 0 everywhere). A negative row or which, or a nil
// source, makes row i NULL.
func choose(dt arrow.DataType, srcs []arrow.Array, which, row []int32, mem memory.Allocator) (arrow.Array, error) {
	n := len(row)
	if dt.ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	ss := make([]source, len(srcs))
	for i, a := range srcs {
		ss[i] = sourceOf(a)
	}
	// Validity first: it settles which rows the value loops below copy.
	valid := newBitmap(mem, n)
	vb := valid.Bytes()
	nulls := 0
	for i := range n {
		w, r := int32(0), row[i]
		if which != nil {
			w = which[i]
		}
		if w < 0 || r < 0 || ss[w].all || (ss[w].valid != nil && !bitutil.BitIsSet(ss[w].valid, ss[w].voff+int(r))) {
			nulls++
			continue
		}
		bitutil.SetBit(vb, i)
	}
	if nulls == 0 {
		valid.Release()
		valid = nil
	}
	src := func(i int) (*source, int) {
		w := int32(0)
		if which != nil {
			w = which[i]
		}
		return &ss[w], int(row[i])
	}
	switch dt.ID() {
	case arrow.BOOL:
		out := newBitmap(mem, n)
		ob := out.Bytes()
		for i := range n {
			if validAt(valid, i) {
				s, r := src(i)
				if bitutil.BitIsSet(s.vals, s.off+r) {
					bitutil.SetBit(ob, i)
				}
			}
		}
		return finish(dt, n, nulls, valid, out), nil
	case arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DECIMAL128:
		w := 8
		if dt.ID() == arrow.DECIMAL128 {
			w = 16
		}
		out := newBuffer(mem, n*w)
		ob := out.Bytes()
		for i := range n {
			if validAt(valid, i) {
				s, r := src(i)
				copy(ob[i*w:i*w+w], s.vals[(s.off+r)*w:])
			}
		}
		return finish(dt, n, nulls, valid, out), nil
	case arrow.STRING:
		total := 0
		for i := range n {
			if validAt(valid, i) {
				s, r := src(i)
				total += int(s.offs[r+1] - s.offs[r])
			}
		}
		sb := newStringBuilder(mem, n, total)
		for i := range n {
			if validAt(valid, i) {
				s, r := src(i)
				sb.write(s.data[s.offs[r]:s.offs[r+1]])
			}
			sb.end()
		}
		sb.valid, sb.nulls = valid, nulls
		return sb.array(), nil
	}
	if valid != nil {
		valid.Release()
	}
	return nil, fmt.Errorf("%w: cannot gather values of type %s", ErrBadExpression, dt)
}

// take returns rows idx of a (a negative index gives NULL).
func take(a arrow.Array, idx []int32, mem memory.Allocator) (arrow.Array, error) {
	return choose(a.DataType(), []arrow.Array{a}, nil, idx, mem)
}
