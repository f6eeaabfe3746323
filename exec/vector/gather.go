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

// GatherArray returns an array of arr's rows idx[0], idx[1], ..., allocated
// from mem (arr itself, retained, when idx is all its rows in order); a
// negative index gives a NULL. It supports the types of package
// types (null, boolean, bigint, double, decimal, text, timestamp).
func GatherArray(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	return gatherArray(mem, arr, idx, denseRuns(idx))
}

// gatherArray is GatherArray given idx's runs (denseRuns), nil when idx is not
// dense.
func gatherArray(mem memory.Allocator, arr arrow.Array, idx []int32, runs []rowRun) (arrow.Array, error) {
	n := len(idx)
	dt := arr.DataType()
	if dt.ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	if len(runs) == 1 && runs[0].src == 0 && int(runs[0].n) == arr.Len() {
		// Every row in order (a join whose probe rows all match once): the
		// array itself, shared.
		arr.Retain()
		return arr, nil
	}
	if runs != nil {
		switch dt.ID() {
		case arrow.BOOL, arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DECIMAL128, arrow.STRING:
			return gatherRuns(mem, arr, n, runs)
		}
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
		bufs = []*memory.Buffer{nullBuf, vb}
		dst := arrow.Uint64Traits.CastFromBytes(vb.Bytes())[:n]
		if !hasNeg { // a filter's selection: no test per row
			for j, i := range idx {
				dst[j] = src[i]
			}
			break
		}
		for j, i := range idx {
			if i >= 0 {
				dst[j] = src[i]
			} else {
				dst[j] = 0
			}
		}
	case arrow.DECIMAL128:
		src := arrow.Uint64Traits.CastFromBytes(d.Buffers()[1].Bytes())[2*off:]
		vb := NewBuffer(mem, n*16)
		bufs = []*memory.Buffer{nullBuf, vb}
		dst := arrow.Uint64Traits.CastFromBytes(vb.Bytes())
		if !hasNeg {
			for j, i := range idx {
				dst[2*j], dst[2*j+1] = src[2*i], src[2*i+1]
			}
			break
		}
		for j, i := range idx {
			if i >= 0 {
				dst[2*j], dst[2*j+1] = src[2*i], src[2*i+1]
			} else {
				dst[2*j], dst[2*j+1] = 0, 0
			}
		}
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
	return arrayOf(dt, n, bufs, nulls), nil
}

// arrayOf makes an array of n rows of type dt over bufs (nil entries allowed),
// taking over the caller's references to them.
func arrayOf(dt arrow.DataType, n int, bufs []*memory.Buffer, nulls int) arrow.Array {
	data := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	out := array.MakeFromData(data)
	data.Release()
	return out
}

// GatherColumns gathers rows idx of every column of cols into dst.
func GatherColumns(mem memory.Allocator, dst []arrow.Array, cols []arrow.Array, idx []int32) ([]arrow.Array, error) {
	runs := denseRuns(idx)
	for _, c := range cols {
		a, err := gatherArray(mem, c, idx, runs)
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

// rowRun is n consecutive source rows from src on.
type rowRun struct{ src, n int32 }

// minRunLen is the mean run length from which a gather copies whole runs
// (one copy per run and buffer) rather than row by row: a filter that keeps
// most rows (TPC-H q1's keeps 98%) leaves runs of dozens of rows.
const minRunLen = 8

// denseRuns returns idx as runs of consecutive rows when idx is strictly
// ascending, has no negative index and its runs average at least minRunLen
// rows; otherwise nil. It gives up at the first descent or once there are too
// many runs, so an unsuitable idx costs little.
func denseRuns(idx []int32) []rowRun {
	n := len(idx)
	if n < minRunLen || idx[0] < 0 {
		return nil
	}
	limit := n / minRunLen
	var runs []rowRun
	start := 0
	for j := 1; j <= n; j++ {
		if j < n {
			if idx[j] == idx[j-1]+1 {
				continue
			}
			if idx[j] <= idx[j-1] {
				return nil
			}
		}
		if len(runs) == limit {
			return nil
		}
		if runs == nil {
			runs = make([]rowRun, 0, limit)
		}
		runs = append(runs, rowRun{src: idx[start], n: int32(j - start)})
		start = j
	}
	return runs
}

// gatherRuns is gatherArray for a dense selection of n rows given as runs, for
// the types whose values are bits, fixed-width words or strings.
func gatherRuns(mem memory.Allocator, arr arrow.Array, n int, runs []rowRun) (arrow.Array, error) {
	dt := arr.DataType()
	d := arr.Data()
	off := d.Offset()
	var nullBuf *memory.Buffer
	nulls := 0
	if valid, voff := ValidityOf(arr); valid != nil {
		nullBuf = copyBitRuns(mem, valid, voff, n, runs)
		nulls = n - bitutil.CountSetBits(nullBuf.Bytes(), 0, n)
		if nulls == 0 {
			nullBuf.Release()
			nullBuf = nil
		}
	}
	var bufs []*memory.Buffer
	switch dt.ID() {
	case arrow.BOOL:
		bufs = []*memory.Buffer{nullBuf, copyBitRuns(mem, d.Buffers()[1].Bytes(), off, n, runs)}
	case arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DECIMAL128:
		w := 8
		if dt.ID() == arrow.DECIMAL128 {
			w = 16
		}
		src := d.Buffers()[1].Bytes()[off*w:]
		vb := NewBuffer(mem, n*w)
		dst := vb.Bytes()
		j := 0
		for _, r := range runs {
			j += copy(dst[j:], src[int(r.src)*w:int(r.src+r.n)*w])
		}
		bufs = []*memory.Buffer{nullBuf, vb}
	case arrow.STRING:
		offs := arr.(*array.String).ValueOffsets()
		var data []byte
		if b := d.Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		total := 0
		for _, r := range runs {
			total += int(offs[r.src+r.n] - offs[r.src])
		}
		if total > math.MaxInt32 {
			if nullBuf != nil {
				nullBuf.Release()
			}
			return nil, fmt.Errorf("exec: gathered strings exceed 2 GiB")
		}
		ob := NewBuffer(mem, (n+1)*4)
		dst := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		db := NewBuffer(mem, total)
		out := db.Bytes()
		j, pos := 0, int32(0)
		for _, r := range runs {
			lo, hi := offs[r.src], offs[r.src+r.n]
			shift := pos - lo
			for _, o := range offs[r.src : r.src+r.n] {
				dst[j] = o + shift
				j++
			}
			pos += int32(copy(out[pos:], data[lo:hi]))
		}
		dst[n] = pos
		bufs = []*memory.Buffer{nullBuf, ob, db}
	}
	return arrayOf(dt, n, bufs, nulls), nil
}

// copyBitRuns returns a bitmap of n bits: the bits of the runs of src (whose
// row 0 is bit off), one after another.
func copyBitRuns(mem memory.Allocator, src []byte, off, n int, runs []rowRun) *memory.Buffer {
	b := NewBuffer(mem, int(bitutil.BytesForBits(int64(n))))
	bm := b.Bytes()
	clear(bm)
	j := 0
	for _, r := range runs {
		bitutil.CopyBitmap(src, off+int(r.src), int(r.n), bm, j)
		j += int(r.n)
	}
	return b
}
