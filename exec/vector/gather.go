package vector

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// GatherOps returns the change kinds of rows idx of ops (nil stays nil). Rows
// with a negative index (the NULL side of an outer join) take the kind of the
// row they are paired with, so callers never pass one without a partner.
func GatherOps(ops []exec.ChangeKind, idx []int32) []exec.ChangeKind {
	if ops == nil {
		return nil
	}
	out := make([]exec.ChangeKind, len(idx))
	for j, i := range idx {
		out[j] = ops[i]
	}
	return out
}

// GatherArray returns a new array of arr's rows idx[0], idx[1], ..., allocated
// from mem; a negative index gives a NULL. It supports the types of package
// types (null, boolean, bigint, double, decimal, text, timestamp).
func GatherArray(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	n := len(idx)
	dt := arr.DataType()
	if dt.ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	d := arr.Data()
	off := d.Offset()
	valid, voff := ValidityOf(arr)
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
		nullBuf = NewBuffer(mem, int(bitutil.BytesForBits(int64(n))))
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
		vb := NewBuffer(mem, int(bitutil.BytesForBits(int64(n))))
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
		vb := NewBuffer(mem, n*8)
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
		vb := NewBuffer(mem, n*16)
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
		ob := NewBuffer(mem, (n+1)*4)
		dst := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		// Sixteen bytes of slack let short strings (most words) move as one or
		// two 8-byte loads and stores instead of a copy call; the bytes past a
		// string are overwritten by the next one. The source side may read past
		// a string's end only within its buffer (Arrow pads buffers to 64 bytes).
		db := NewBuffer(mem, total+16)
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

// GatherColumns gathers rows idx of every column of cols into dst.
func GatherColumns(mem memory.Allocator, dst []arrow.Array, cols []arrow.Array, idx []int32) ([]arrow.Array, error) {
	for _, c := range cols {
		a, err := GatherArray(mem, c, idx)
		if err != nil {
			ReleaseArrays(dst)
			return nil, err
		}
		dst = append(dst, a)
	}
	return dst, nil
}

// GatherRecord returns a new record of rec's rows idx.
func GatherRecord(mem memory.Allocator, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols, err := GatherColumns(mem, make([]arrow.Array, 0, rec.NumCols()), rec.Columns(), idx)
	if err != nil {
		return nil, err
	}
	return MakeRecord(rec.Schema(), cols, len(idx))
}
