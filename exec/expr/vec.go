package expr

// Buffer-level helpers shared by the kernels: fixed-width output buffers, validity
// bitmaps, and wrapping buffers into arrays. Kernels compute over whole typed
// slices and combine validity bitmaps a word at a time; nothing here works per row
// through an interface.

import (
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// newBuffer returns a zeroed buffer of size bytes from mem: a new buffer's
// first allocation is zeroed by every Arrow allocator (Go's, the mallocator's
// calloc, vector.PoolAllocator), so it is not cleared again here.
func newBuffer(mem memory.Allocator, size int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(size)
	return buf
}

// newValues returns a buffer holding n values of type T, and the values as a slice.
func newValues[T arrow.FixedWidthType](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	var zero T
	buf := newBuffer(mem, n*int(unsafe.Sizeof(zero)))
	return buf, arrow.GetData[T](buf.Bytes())
}

// vals reads a fixed-width argument that is either a full column or a literal
// kept as one row (see kernelMode): at(i) is row i, or row 0 for the literal.
type vals[T any] struct {
	v []T
	m int // -1 for a column, 0 for a one-row literal
}

func valsOf[T any](v []T) vals[T] {
	if len(v) == 1 {
		return vals[T]{v, 0}
	}
	return vals[T]{v, -1}
}

func (a vals[T]) at(i int) T { return a.v[i&a.m] }

func int64Arg(a arrow.Array) vals[int64]     { return valsOf(int64Values(a)) }
func float64Arg(a arrow.Array) vals[float64] { return valsOf(a.(*array.Float64).Float64Values()) }
func decimalArg(a arrow.Array) vals[num]     { return valsOf(a.(*array.Decimal128).Values()) }

// int64Values reads an Int64 or Timestamp array's values.
func int64Values(a arrow.Array) []int64 {
	off := a.Data().Offset()
	return arrow.GetData[int64](a.Data().Buffers()[1].Bytes())[off : off+a.Len()]
}

// newBitmap returns a zeroed bitmap of n bits.
func newBitmap(mem memory.Allocator, n int) *memory.Buffer {
	return newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
}

// finish wraps buffers into an array of type dt with n rows and releases the
// caller's references to them. nulls may be array.UnknownNullCount.
func finish(dt arrow.DataType, n int, nulls int, bufs ...*memory.Buffer) arrow.Array {
	data := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data)
}

// validity is the AND of the validity of arrs (all of length n): a bitmap, or nil
// when no row is null, and the number of null rows.
func validity(mem memory.Allocator, n int, arrs ...arrow.Array) (*memory.Buffer, int) {
	var out *memory.Buffer
	for _, a := range arrs {
		if a.NullN() == 0 {
			continue
		}
		if out == nil {
			out = newBitmap(mem, n)
			if a.NullN() == a.Len() {
				return out, n
			}
			bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, out.Bytes(), 0)
			continue
		}
		if a.NullN() == a.Len() {
			memory.Set(out.Bytes(), 0)
			return out, n
		}
		bitutil.BitmapAnd(out.Bytes(), a.NullBitmapBytes(), 0, int64(a.Data().Offset()), out.Bytes(), 0, int64(n))
	}
	if out == nil {
		return nil, 0
	}
	return out, n - bitutil.CountSetBits(out.Bytes(), 0, n)
}

// validAt reports whether row i is valid in a bitmap from validity (nil: all valid).
func validAt(bitmap *memory.Buffer, i int) bool {
	return bitmap == nil || bitutil.BitIsSet(bitmap.Bytes(), i)
}

// boolValues gives the value bits of a Boolean array and their bit offset.
func boolValues(a *array.Boolean) ([]byte, int) {
	return a.Data().Buffers()[1].Bytes(), a.Data().Offset()
}

// strings gives a String array's offsets (n+1 of them) and the bytes they index:
// row i is data[offs[i]:offs[i+1]].
func stringData(a *array.String) (offs []int32, data []byte) {
	offs = a.ValueOffsets()
	if bufs := a.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		data = bufs[2].Bytes()
	}
	return offs, data
}

// stringBuilder builds a String array's buffers directly: callers append bytes to
// the data and close each row. It tracks the write position as an integer, not
// as a growing slice, so that appending stores no pointer (and pays no GC write
// barrier) per row.
type stringBuilder struct {
	mem   memory.Allocator
	offs  *memory.Buffer
	o     []int32
	data  *memory.Buffer
	d     []byte // all of data's capacity
	pos   int    // bytes written
	valid *memory.Buffer
	nulls int
	n     int
}

// newStringBuilder prepares n rows with room for dataHint bytes.
func newStringBuilder(mem memory.Allocator, n, dataHint int) *stringBuilder {
	sb := &stringBuilder{mem: mem}
	sb.offs, sb.o = newValues[int32](mem, n+1)
	sb.data = memory.NewResizableBuffer(mem)
	sb.data.Reserve(max(dataHint, 0))
	sb.d = sb.data.Buf()
	return sb
}

// write appends bytes to the current row.
func (sb *stringBuilder) write(p []byte) {
	if sb.pos+len(p) > len(sb.d) {
		sb.grow(len(p))
	}
	sb.pos += copy(sb.d[sb.pos:], p)
}

// writeString appends s to the current row.
func (sb *stringBuilder) writeString(s string) {
	if sb.pos+len(s) > len(sb.d) {
		sb.grow(len(s))
	}
	sb.pos += copy(sb.d[sb.pos:], s)
}

// writeByte appends one byte to the current row.
func (sb *stringBuilder) writeByte(c byte) {
	if sb.pos == len(sb.d) {
		sb.grow(1)
	}
	sb.d[sb.pos] = c
	sb.pos++
}

// writeRune appends r's UTF-8 encoding to the current row.
func (sb *stringBuilder) writeRune(r rune) {
	if sb.pos+utf8.UTFMax > len(sb.d) {
		sb.grow(utf8.UTFMax)
	}
	sb.pos += utf8.EncodeRune(sb.d[sb.pos:], r)
}

// grow makes room for more bytes, at least doubling the buffer.
func (sb *stringBuilder) grow(more int) {
	sb.data.Reserve(max(2*len(sb.d), sb.pos+more, 64))
	sb.d = sb.data.Buf()
}

// end closes row sb.n.
func (sb *stringBuilder) end() {
	sb.n++
	sb.o[sb.n] = int32(sb.pos)
}

// array returns the built array; every row must have been closed.
func (sb *stringBuilder) array() arrow.Array {
	sb.data.ResizeNoShrink(sb.pos)
	return finish(arrow.BinaryTypes.String, sb.n, sb.nulls, sb.valid, sb.offs, sb.data)
}

// release frees the buffers of a builder abandoned on an error.
func (sb *stringBuilder) release() {
	for _, b := range []*memory.Buffer{sb.valid, sb.offs, sb.data} {
		if b != nil {
			b.Release()
		}
	}
}

// releaseAll releases every non-nil array.
func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// bitIsSet reads bit i of a bitmap.
func bitIsSet(bitmap []byte, i int) bool { return bitutil.BitIsSet(bitmap, i) }
