package exec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	mathbits "math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/expr"
)

// filterOp is kind "filter" (see FilterConfig): it keeps the rows where Cond is
// true (NULL counts as false) with their change kinds. A batch whose rows all
// pass is forwarded as is; one whose kept rows are contiguous is forwarded as a
// zero-copy slice; otherwise the kept rows are gathered by a selection vector.
// An empty result emits nothing.
type filterOp struct {
	cond *expr.Expr
	mem  memory.Allocator
	sel  []int32
}

var _ Operator = (*filterOp)(nil)

func newFilterOp(spec OperatorSpec) (Operator, error) {
	var cfg FilterConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("filter: bad config: %w", err)
	}
	if cfg.Cond == nil {
		return nil, fmt.Errorf("filter: no condition")
	}
	return &filterOp{cond: cfg.Cond}, nil
}

func (o *filterOp) Open(ctx context.Context, tc *TaskContext) error {
	o.mem = taskAlloc(tc)
	return nil
}

func (o *filterOp) ProcessBatch(ctx context.Context, input int, b Batch, out Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	res, err := expr.Eval(o.cond, b.Rec, o.mem)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer res.Release()
	if res.Len() != n {
		return fmt.Errorf("filter: condition gave %d values for %d rows", res.Len(), n)
	}
	cond, ok := res.(*array.Boolean)
	if !ok {
		if res.NullN() == n {
			return nil // WHERE NULL
		}
		return fmt.Errorf("filter: condition is %s, not boolean", res.DataType())
	}
	sel := trueRows(cond, o.sel[:0])
	o.sel = sel
	k := len(sel)
	switch {
	case k == 0:
		return nil
	case k == n:
		return out.Collect(ctx, b)
	case int(sel[k-1]-sel[0]) == k-1:
		lo, hi := int64(sel[0]), int64(sel[k-1])+1
		s := Batch{Rec: b.Rec.NewSlice(lo, hi)}
		defer s.Rec.Release()
		if b.Ops != nil {
			s.Ops = b.Ops[lo:hi]
		}
		return out.Collect(ctx, s)
	}
	rec, err := gatherRecord(o.mem, b.Rec, sel)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, Batch{Rec: rec, Ops: gatherOps(b.Ops, sel)})
}

// trueRows appends to sel the rows where cond is true (not false, not NULL): a
// selection vector.
func trueRows(cond *array.Boolean, sel []int32) []int32 {
	d := cond.Data()
	if d.Buffers()[1] == nil {
		return sel
	}
	vals, off := d.Buffers()[1].Bytes(), d.Offset()
	valid, voff := validityOf(cond)
	n := cond.Len()
	if off == 0 && (valid == nil || voff == 0) {
		// Sixty-four rows at a time: one AND of the value and validity words, then
		// only the set bits are visited.
		full := n / 64
		for w := 0; w < full; w++ {
			bits := binary.LittleEndian.Uint64(vals[w*8:])
			if valid != nil {
				bits &= binary.LittleEndian.Uint64(valid[w*8:])
			}
			for bits != 0 {
				sel = append(sel, int32(w*64+mathbits.TrailingZeros64(bits)))
				bits &= bits - 1
			}
		}
		for i := full * 64; i < n; i++ {
			if bitutil.BitIsSet(vals, i) && (valid == nil || bitutil.BitIsSet(valid, i)) {
				sel = append(sel, int32(i))
			}
		}
		return sel
	}
	for i := range n {
		if bitutil.BitIsSet(vals, off+i) && (valid == nil || bitutil.BitIsSet(valid, voff+i)) {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func (o *filterOp) ProcessSignal(ctx context.Context, input int, s Signal, out Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *filterOp) Close(ctx context.Context) error { return nil }

// Gathering rows by index: the selection machinery of filter, shared with
// unnest (repeating columns), hash_join (pairing rows) and sort (permuting).

// gatherOps returns the change kinds of rows idx of ops (nil stays nil). Rows
// with a negative index (the NULL side of an outer join) take the kind of the
// row they are paired with, so callers never pass one without a partner.
func gatherOps(ops []ChangeKind, idx []int32) []ChangeKind {
	if ops == nil {
		return nil
	}
	out := make([]ChangeKind, len(idx))
	for j, i := range idx {
		out[j] = ops[i]
	}
	return out
}

// gatherArray returns a new array of arr's rows idx[0], idx[1], ..., allocated
// from mem; a negative index gives a NULL. It supports the types of package
// types (null, boolean, bigint, double, decimal, text, timestamp).
func gatherArray(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	n := len(idx)
	dt := arr.DataType()
	if dt.ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	d := arr.Data()
	off := d.Offset()
	valid, voff := validityOf(arr)
	var nullBuf *memory.Buffer
	nulls := 0
	hasNeg, allNeg := false, true
	for _, i := range idx {
		if i < 0 {
			hasNeg = true
		} else {
			allNeg = false
		}
	}
	if allNeg {
		// Also covers n == 0, and a source without rows (or buffers) at all.
		return array.MakeArrayOfNull(mem, dt, n), nil
	}
	if valid != nil || hasNeg {
		nullBuf = newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
		bm := nullBuf.Bytes()
		clear(bm)
		for j, i := range idx {
			if i >= 0 && (valid == nil || bitutil.BitIsSet(valid, voff+int(i))) {
				bitutil.SetBit(bm, j)
			} else {
				nulls++
			}
		}
		if nulls == 0 {
			nullBuf.Release()
			nullBuf = nil
		}
	}
	var bufs []*memory.Buffer
	switch dt.ID() {
	case arrow.BOOL:
		src := d.Buffers()[1].Bytes()
		vb := newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
		dst := vb.Bytes()
		clear(dst)
		for j, i := range idx {
			if i >= 0 && bitutil.BitIsSet(src, off+int(i)) {
				bitutil.SetBit(dst, j)
			}
		}
		bufs = []*memory.Buffer{nullBuf, vb}
	case arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP:
		src := arrow.Uint64Traits.CastFromBytes(d.Buffers()[1].Bytes())[off:]
		vb := newBuffer(mem, n*8)
		dst := arrow.Uint64Traits.CastFromBytes(vb.Bytes())
		for j, i := range idx {
			if i >= 0 {
				dst[j] = src[i]
			} else {
				dst[j] = 0
			}
		}
		bufs = []*memory.Buffer{nullBuf, vb}
	case arrow.DECIMAL128:
		src := arrow.Uint64Traits.CastFromBytes(d.Buffers()[1].Bytes())[2*off:]
		vb := newBuffer(mem, n*16)
		dst := arrow.Uint64Traits.CastFromBytes(vb.Bytes())
		for j, i := range idx {
			if i >= 0 {
				dst[2*j], dst[2*j+1] = src[2*i], src[2*i+1]
			} else {
				dst[2*j], dst[2*j+1] = 0, 0
			}
		}
		bufs = []*memory.Buffer{nullBuf, vb}
	case arrow.STRING:
		s := arr.(*array.String)
		offs := s.ValueOffsets()
		var data []byte
		if b := d.Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		total := 0
		for _, i := range idx {
			if i >= 0 {
				total += int(offs[i+1] - offs[i])
			}
		}
		if total > math.MaxInt32 {
			return nil, fmt.Errorf("exec: gathered strings exceed 2 GiB")
		}
		ob := newBuffer(mem, (n+1)*4)
		dst := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		// Sixteen bytes of slack let short strings (most words) move as one or
		// two 8-byte loads and stores instead of a copy call; the bytes past a
		// string are overwritten by the next one. The source side may read past
		// a string's end only within its buffer (Arrow pads buffers to 64 bytes).
		db := newBuffer(mem, total+16)
		out := db.Bytes()
		pos := int32(0)
		for j, i := range idx {
			dst[j] = pos
			if i < 0 {
				continue
			}
			lo, hi := offs[i], offs[i+1]
			if hi-lo <= 16 && int(lo)+16 <= len(data) {
				binary.LittleEndian.PutUint64(out[pos:pos+8], binary.LittleEndian.Uint64(data[lo:lo+8]))
				if hi-lo > 8 {
					binary.LittleEndian.PutUint64(out[pos+8:pos+16], binary.LittleEndian.Uint64(data[lo+8:lo+16]))
				}
				pos += hi - lo
			} else {
				pos += int32(copy(out[pos:], data[lo:hi]))
			}
		}
		dst[n] = pos
		bufs = []*memory.Buffer{nullBuf, ob, db}
	default:
		if nullBuf != nil {
			nullBuf.Release()
		}
		return nil, fmt.Errorf("exec: cannot gather rows of type %s", dt)
	}
	data := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	out := array.MakeFromData(data)
	data.Release()
	return out, nil
}

// gatherColumns gathers rows idx of every column of cols into dst.
func gatherColumns(mem memory.Allocator, dst []arrow.Array, cols []arrow.Array, idx []int32) ([]arrow.Array, error) {
	for _, c := range cols {
		a, err := gatherArray(mem, c, idx)
		if err != nil {
			releaseArrays(dst)
			return nil, err
		}
		dst = append(dst, a)
	}
	return dst, nil
}

// gatherRecord returns a new record of rec's rows idx.
func gatherRecord(mem memory.Allocator, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols, err := gatherColumns(mem, make([]arrow.Array, 0, rec.NumCols()), rec.Columns(), idx)
	if err != nil {
		return nil, err
	}
	return makeRecord(rec.Schema(), cols, len(idx))
}
